"""git subcommands that change the repository or talk to a remote: side effects, and the
destructive (checkout -- ., branch -D, clean -f) and forbidden (push --force, reset --hard,
clean -fdx) forms, with long options resolved as git resolves abbreviations — a word that
may mean a dangerous option counts as that option (`--forc` is --force: forbidden) — and
the listing forms of branch, tag, remote, stash ... that are read-only."""

from __future__ import annotations

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.gitopts import BRANCH_SPEC, READ_SPECS, TAG_SPEC
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import Spec, spec
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["mutating"]

Args = list[Word]
NETWORK = frozenset(
    {"push", "pull", "fetch", "clone", "ls-remote", "submodule", "request-pull"}
    | {"send-email", "lfs", "svn", "p4", "archive"}
)
DESTRUCTIVE = frozenset({"filter-branch", "filter-repo", "prune", "gc", "replace", "rm"})
_PUSH = (
    "force", "force-with-lease", "force-if-includes", "follow-tags", "mirror", "delete",
    "prune", "dry-run", "porcelain", "all", "branches", "tags", "atomic", "signed",
    "no-verify", "verify", "set-upstream", "repo", "receive-pack", "exec", "progress",
    "quiet", "verbose", "thin", "push-option", "recurse-submodules", "ipv4", "ipv6",
)  # fmt: skip
_RESET = (
    "hard", "soft", "mixed", "merge", "keep", "quiet", "patch", "intent-to-add",
    "recurse-submodules", "pathspec-from-file", "pathspec-file-nul", "refresh",
)  # fmt: skip
_CLEAN = ("force", "dry-run", "quiet", "interactive", "exclude")
_CHECKOUT = (
    "force", "ours", "theirs", "merge", "patch", "overwrite-ignore", "detach", "orphan",
    "track", "no-track", "guess", "quiet", "progress", "conflict", "ignore-skip-worktree-bits",
    "recurse-submodules", "pathspec-from-file", "overlay", "ignore-other-worktrees",
)  # fmt: skip
_SWITCH = (
    "force", "discard-changes", "force-create", "create", "detach", "orphan", "guess",
    "track", "merge", "conflict", "quiet", "progress", "recurse-submodules",
    "ignore-other-worktrees",
)  # fmt: skip
_BRANCH = (
    "delete", "force", "move", "copy", "set-upstream-to", "unset-upstream",
    "edit-description", "track", "no-track", "create-reflog", "recurse-submodules",
)  # fmt: skip
_SUBLISTS: dict[str, dict[str, Spec]] = {
    "stash": {"list": READ_SPECS["log"], "show": READ_SPECS["diff"]},
    "reflog": {"": READ_SPECS["log"], "show": READ_SPECS["log"], "exists": spec()},
    "worktree": {"list": spec("--porcelain", "-v --verbose", "--expire =", "-z")},
    "notes": {"": spec(), "list": spec(), "show": spec()},
    "remote": {"": spec("-v --verbose"), "get-url": spec("--push", "--all")},
}
_SUBDROPS = {
    "stash": ("drop", "clear"),
    "reflog": ("expire", "delete"),
    "worktree": ("remove", "prune"),
    "notes": ("remove", "prune"),
}


def means(rest: Args, names: tuple[str, ...]) -> set[str]:
    """The long options the words of `rest` may mean: exact names, else every name a word
    is a prefix of (git accepts unique prefixes; an ambiguous one counts as all of them)."""
    out: set[str] = set()
    for w in rest:
        v = w.value
        if v == "--":
            break
        if not v.startswith("--") or len(v) == 2:
            continue
        body = v[2:].split("=", 1)[0]
        if body in names:
            out.add(body)
        elif not body.startswith("no-"):
            out |= {n for n in names if n.startswith(body)}
    return out


def letters(rest: Args) -> set[str]:
    out: set[str] = set()
    for w in rest:
        v = w.value
        if v == "--":
            break
        if v.startswith("-") and not v.startswith("--"):
            out |= set(v[1:])
    return out


def mutating(b: Builder, sub: str, rest: Args) -> None:
    short, operands = letters(rest), [w for w in rest if not w.value.startswith("-")]
    if _listing(b, sub, rest, operands):
        return
    if sub == "push":
        _push(b, rest, short, operands)
    elif sub == "reset":
        found = means(rest, _RESET)
        if "hard" in found:
            b.add(Risk.FORBIDDEN, "git reset --hard discards uncommitted work")
        elif found & {"merge", "keep"}:
            b.add(Risk.DESTRUCTIVE, "git reset --merge/--keep may discard work")
    elif sub == "clean":
        _clean(b, rest, short)
    elif _destructive(b, sub, rest, short, operands):
        b.add(Risk.DESTRUCTIVE, f"git {sub} discards or deletes work")
    if sub in NETWORK or (
        sub == "remote" and operands[:1] and operands[0].value in ("show", "update", "prune")
    ):
        b.add(Risk.NETWORK, f"git {sub} talks to a remote")
        b.part.network = True
        b.part.downloads = b.part.downloads or sub in ("clone", "pull", "fetch")
    b.add(Risk.EXEC, f"git {sub}")
    for i, w in enumerate(rest):
        if w.value.startswith("-") or "://" in w.value or ":" in w.value:
            continue
        if not w.static or (b.state.known and (b.cwd / w.value).exists()):
            b.arg(i, w, "read")


def _push(b: Builder, rest: Args, short: set[str], operands: Args) -> None:
    found = means(rest, _PUSH)
    forced = "f" in short or found & {"force", "force-with-lease", "force-if-includes"}
    if forced or "mirror" in found or any(w.value.startswith("+") for w in operands):
        b.add(Risk.FORBIDDEN, "git push --force rewrites the remote's history")
    if (
        "d" in short
        or found & {"delete", "prune"}
        or any(w.value.startswith(":") for w in operands)
    ):
        b.add(Risk.DESTRUCTIVE, "git push deletes remote branches")


def _clean(b: Builder, rest: Args, short: set[str]) -> None:
    forced = "f" in short or "force" in means(rest, _CLEAN)
    if forced and short & {"x", "X"}:
        b.add(Risk.FORBIDDEN, "git clean -fdx deletes ignored files too (.env, venvs)")
    else:
        b.add(Risk.DESTRUCTIVE, "git clean deletes untracked files")


def _destructive(b: Builder, sub: str, rest: Args, short: set[str], operands: Args) -> bool:
    if sub in DESTRUCTIVE:
        return True
    if sub == "checkout":
        found = means(rest, _CHECKOUT)
        return bool(
            short & {"f", "B"}
            or "force" in found
            or "--" in [w.value for w in rest]
            or any(
                w.value == "." or (b.state.known and (b.cwd / w.value).exists()) for w in operands
            )
            or not b.state.known
        )
    if sub == "restore":
        exact = {w.value for w in rest}
        staged = "--staged" in exact or "S" in short
        return not staged or "W" in short or bool(means(rest, ("worktree",)))
    if sub == "switch":
        return bool(
            short & {"f", "C"}
            or means(rest, _SWITCH) & {"force", "discard-changes", "force-create"}
        )
    if sub in _SUBDROPS:
        return bool(operands) and operands[0].value in _SUBDROPS[sub]
    if sub in ("branch", "tag"):
        found = means(rest, _BRANCH)
        return bool(short & {"d", "D", "f", "M", "C"} or found & {"delete", "force"})
    return sub == "update-ref" and "d" in short


def _listing(b: Builder, sub: str, rest: Args, operands: Args) -> bool:
    """Forms of mutating subcommands that only list or show (their options checked)."""
    if sub == "branch" and not operands:
        return check(b, "git branch", BRANCH_SPEC, rest).clean
    if sub == "tag" and (not operands or any(w.value in ("-l", "--list") for w in rest)):
        return check(b, "git tag", TAG_SPEC, rest).clean
    if sub == "clean":  # -n (even with -f) only lists; an abbreviation does not count
        return "n" in letters(rest) or "--dry-run" in [w.value for w in rest]
    forms = _SUBLISTS.get(sub, {})
    action = rest[0].value if rest and not rest[0].value.startswith("-") else ""
    if action not in forms:
        return False
    return check(b, f"git {sub} {action}".strip(), forms[action], rest, 1 if action else 0).clean
