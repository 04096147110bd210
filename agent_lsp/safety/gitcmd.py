"""`git`: global options, then read-only, mutating, network, destructive and forbidden
subcommands (push --force, reset --hard, clean -fdx)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agent_lsp.safety.programs import split_args
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

if TYPE_CHECKING:
    from agent_lsp.safety.classify import Builder

__all__ = ["git"]

Args = list[Word]
READ = frozenset(
    {"status", "diff", "log", "show", "blame", "annotate", "ls-files", "ls-tree", "rev-parse"}
    | {"rev-list", "describe", "shortlog", "grep", "cat-file", "show-ref", "name-rev", "help"}
    | {"merge-base", "count-objects", "version", "whatchanged", "diff-tree", "diff-files"}
    | {"diff-index", "for-each-ref", "check-ignore", "check-attr", "var", "show-branch"}
)
NETWORK = frozenset(
    {"push", "pull", "fetch", "clone", "ls-remote", "submodule", "request-pull"}
    | {"send-email", "lfs", "svn", "p4", "archive"}
)
DESTRUCTIVE = frozenset({"filter-branch", "filter-repo", "prune", "gc", "replace", "rm"})
_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})
_PLAIN_GLOBALS = frozenset(
    {"--no-pager", "-P", "-p", "--paginate", "--no-replace-objects", "--literal-pathspecs"}
    | {"--no-optional-locks", "--bare", "--glob-pathspecs", "--noglob-pathspecs"}
)
_RISKY_READ_FLAGS = ("--output", "-O", "--open-files-in-pager", "--ext-diff", "--exec")


def _letters(args: Args) -> set[str]:
    out: set[str] = set()
    for w in args:
        v = w.value
        if v.startswith("-") and not v.startswith("--"):
            out |= set(v[1:])
    return out


def _flags(args: Args) -> set[str]:
    return {w.value.split("=", 1)[0] for w in args if w.value.startswith("--")}


def git(b: Builder, args: Args) -> None:
    i = 0
    while i < len(args) and args[i].value.startswith("-"):
        v = args[i].value
        key = v.split("=", 1)[0]
        if key in ("-c", "--config-env") or v.startswith("-c"):
            b.add(Risk.EXEC, "git -c sets configuration (pagers, hooks, ssh commands)", b.offset)
        elif key in ("--git-dir", "--work-tree", "-C"):
            value = v.split("=", 1)[1] if "=" in v else None
            if value is None and i + 1 < len(args):
                b.arg(i + 1, args[i + 1], "meta")
                if key == "-C" and args[i + 1].static:
                    res = b.resolve(args[i + 1].value)
                    b.state.cwd = res.path if res is not None else b.state.cwd
            elif value is not None:
                b.path(b.offset + 1 + i, value, "meta")
        elif v in ("--version", "--help", "-h", "--exec-path", "--html-path"):
            return
        elif v not in _PLAIN_GLOBALS:
            b.add(Risk.EXEC, f"git {v}")
        i += 2 if key in _GLOBAL_VALUES and "=" not in v else 1
    if i >= len(args):
        return
    sub, rest = args[i].value, args[i + 1 :]
    if i:
        b.part.aliases.append(["git", sub, *(w.value for w in rest)])
    _subcommand(b, sub, rest, b.offset + 1 + i)


def _paths(b: Builder, rest: Args, first: int) -> None:
    operands, _ = split_args(rest)
    after_dashes = "--" in [w.value for w in rest]
    for j, w in operands:
        if "://" in w.value or re.match(r"[\w.-]+@[\w.-]+:", w.value):
            continue  # a remote URL
        if ":" in w.value and not after_dashes:
            b.path(first + 1 + j, w.value.split(":", 1)[1] or ".", "meta")
            res = b.resolve(w.value.split(":", 1)[1] or ".")
            if res is not None and res.secret:
                b.add(Risk.SECRET, f"shows the secret file {w.value}", first + 1 + j)
        elif after_dashes or (b.cwd / w.value).exists():
            saved = b.offset
            b.offset = first
            b.arg(j, w, "read")
            b.offset = saved


def _subcommand(b: Builder, sub: str, rest: Args, token: int) -> None:
    letters, flags = _letters(rest), _flags(rest)
    operands = [w for w in rest if not w.value.startswith("-")]
    if sub in READ:
        if any(w.value.startswith(_RISKY_READ_FLAGS) for w in rest):
            b.add(Risk.EXEC, f"git {sub} with a flag that writes or runs programs", token)
        _paths(b, rest, token)
        return
    if sub == "push":
        forced = "f" in letters or flags & {"--force", "--force-with-lease", "--force-if-includes"}
        if forced or "--mirror" in flags or any(w.value.startswith("+") for w in operands):
            b.add(Risk.FORBIDDEN, "git push --force rewrites the remote's history", token)
        if "d" in letters or "--delete" in flags or any(w.value.startswith(":") for w in operands):
            b.add(Risk.DESTRUCTIVE, "git push deletes a remote branch", token)
    if sub == "reset":
        if "--hard" in flags:
            b.add(Risk.FORBIDDEN, "git reset --hard discards uncommitted work", token)
        elif flags & {"--merge", "--keep"}:
            b.add(Risk.DESTRUCTIVE, f"git reset {' '.join(sorted(flags))}", token)
    if sub == "clean":
        if "n" in letters or "--dry-run" in flags:
            return
        if ("f" in letters or "--force" in flags) and letters & {"x", "X"}:
            b.add(Risk.FORBIDDEN, "git clean -fdx deletes ignored files too (.env, venvs)", token)
        else:
            b.add(Risk.DESTRUCTIVE, "git clean deletes untracked files", token)
    if _destructive(sub, rest, letters, flags, operands, b):
        b.add(Risk.DESTRUCTIVE, f"git {sub} discards or deletes work", token)
    listing = _listing(sub, rest, letters, flags, operands)
    if listing:
        return
    if sub in NETWORK or (
        sub == "remote" and operands[:1] and operands[0].value in ("show", "update", "prune")
    ):
        b.add(Risk.NETWORK, f"git {sub} talks to a remote", token)
        b.part.network = True
        b.part.downloads = b.part.downloads or sub in ("clone", "pull", "fetch")
    b.add(Risk.EXEC, f"git {sub}", token)
    _paths(b, rest, token)


def _destructive(
    sub: str, rest: Args, letters: set[str], flags: set[str], operands: Args, b: Builder
) -> bool:
    if sub in DESTRUCTIVE:
        return True
    if sub == "checkout":
        return bool(
            "f" in letters
            or "--force" in flags
            or "--" in [w.value for w in rest]
            or any(w.value == "." or (b.cwd / w.value).exists() for w in operands)
        )
    if sub == "restore":
        return not (flags == {"--staged"} or letters == {"S"})
    if sub == "switch":
        return "f" in letters or bool(flags & {"--force", "--discard-changes"})
    if sub in ("stash", "reflog", "worktree", "notes"):
        return bool(operands[:1]) and operands[0].value in (
            "drop",
            "clear",
            "expire",
            "delete",
            "remove",
            "prune",
        )
    if sub in ("branch", "tag"):
        return bool(
            letters & {"d", "D"} or flags & {"--delete"} or (sub == "branch" and "f" in letters)
        )
    return sub == "update-ref" and "d" in letters


def _listing(sub: str, rest: Args, letters: set[str], flags: set[str], operands: Args) -> bool:
    """Forms of mutating subcommands that only list or show."""
    if sub == "branch":
        changing = letters & {"d", "D", "m", "M", "c", "C", "u", "f"} or flags & {
            "--delete",
            "--move",
            "--copy",
            "--set-upstream-to",
            "--unset-upstream",
            "--edit-description",
            "--force",
        }
        return not changing and (not operands or bool(flags & {"--list", "--contains", "--merged"}))
    if sub == "tag":
        return not operands or "l" in letters or "--list" in flags
    if sub == "remote":
        return (
            not operands or operands[0].value in ("get-url",) or (letters == {"v"} and not operands)
        )
    if sub == "config":
        reads = {"--get", "--get-all", "--get-regexp", "--list", "--show-origin", "--get-urlmatch"}
        return bool(
            flags & reads
            or "l" in letters
            or (operands[:1] and operands[0].value in ("get", "list"))
        )
    if sub == "stash":
        return bool(operands[:1]) and operands[0].value in ("list", "show")
    if sub in ("reflog", "worktree", "notes", "submodule"):
        return not operands or operands[0].value in ("show", "list", "status")
    return False
