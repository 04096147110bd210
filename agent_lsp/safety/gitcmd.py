"""`git`: global options, then read-only subcommands (checked against `gitopts`), mutating,
network, destructive and forbidden ones (push --force, reset --hard, clean -fdx, setting
configuration that runs programs) — abbreviations of long options resolved the way git's
parse-options resolves them (`--ha` is `--hard`), for what they may mean."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.gitconfig import executable_key
from agent_lsp.safety.gitmutate import mutating
from agent_lsp.safety.gitopts import CONFIG_SPEC, READ_SPECS
from agent_lsp.safety.grammar import check
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["git"]

Args = list[Word]
_PLAIN_GLOBALS = frozenset(
    {"--no-pager", "-P", "--no-replace-objects", "--literal-pathspecs", "--glob-pathspecs"}
    | {"--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-advice"}
)
_INFO = frozenset({"--version", "--html-path", "--man-path", "--info-path", "--exec-path"})
_VALUED = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
    | {"--list-cmds", "--attr-source"}
)
_REPO_OPTIONS = frozenset({"-C", "--git-dir", "--work-tree", "--bare", "--super-prefix"})
_NEW_WRITES = frozenset({"set", "unset", "rename-section", "remove-section", "edit"})
_CONFIG_VALUES = frozenset({"-f", "--file", "--blob", "--type", "--default", "--value", "--url"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"})
_CONFIG_UNSETS = frozenset({"--unset", "--unset-all", "--remove-section"})


def git(b: Builder, name: str, args: Args) -> None:
    i = 0
    repo_dir = b.cwd
    while i < len(args) and args[i].value.startswith("-"):
        w = args[i]
        v = w.value
        key, eq, attached = v.partition("=")
        if key.startswith("-c") and key not in ("-c",) and not key.startswith("--"):
            key, attached, eq = "-c", v[2:], "="  # -ckey=value
        takes = key in _VALUED and not eq
        value = (
            Word(w.raw, attached, w.dynamic)
            if eq
            else (args[i + 1] if takes and i + 1 < len(args) else None)
        )
        token = b.token(i)
        if key in ("-c", "--config-env"):
            _config_setting(b, key, value, token)
        elif key in _REPO_OPTIONS or (key in ("-p", "--paginate", "--exec-path") and eq):
            b.add(Risk.EXEC, f"git {key} uses a repository or programs other than this one", token)
            if value is not None and key in ("-C", "--git-dir", "--work-tree"):
                b.arg(i + (0 if eq else 1), value, "meta")
                if key == "-C" and value.static:
                    res = b.resolve(value.value)
                    repo_dir = res.path if res is not None else repo_dir
        elif key in ("-p", "--paginate"):
            b.add(Risk.EXEC, "git -p runs a pager", token)
        elif v in _INFO:
            return
        elif v in ("--help", "-h"):
            if i + 1 < len(args):
                b.add(Risk.EXEC, "git help opens a manual page or a browser", token)
            return
        elif v not in _PLAIN_GLOBALS and key not in ("--namespace", "--list-cmds"):
            b.add(Risk.EXEC, f"git {v}: an option not known to be safe", token)
        i += 2 if takes else 1
    if i >= len(args):
        return
    sub_word, rest = args[i], args[i + 1 :]
    if not sub_word.static:
        b.add(Risk.UNDECIDABLE, "the git subcommand is not known before running", b.token(i))
        return
    sub = sub_word.value
    if i:
        b.part.aliases.append(["git", sub, *(w.value for w in rest)])
    if not b.state.known and repo_dir == b.cwd:
        b.add(Risk.UNDECIDABLE, "git: the repository depends on a folder not known here")
    elif (found := bare_repository(b, repo_dir)) is not None:
        b.add(Risk.EXEC, f"git would use the repository {found} (its config may run programs)")
    saved = b.offset
    b.offset += 1 + i  # the subcommand is argv[0] of what follows
    try:
        if sub in READ_SPECS:
            read_only(b, sub, rest)
        elif sub == "config":
            config(b, rest)
        else:
            mutating(b, sub, rest)
    finally:
        b.offset = saved


def _config_setting(b: Builder, key: str, value: Word | None, token: int) -> None:
    if value is None or not value.static:
        b.add(Risk.UNDECIDABLE, f"git {key}: the setting is not known before running", token)
        return
    name = value.value.split("=", 1)[0]
    if executable_key(name):
        b.add(Risk.FORBIDDEN, f"git {key} {name}: configuration that runs programs", token)
    b.add(Risk.EXEC, f"git {key} sets configuration ({name})", token)


def bare_repository(b: Builder, start: Path) -> Path | None:
    """A folder git would take for a repository on the way up from `start` to the workspace
    root, other than a `.git` folder (those are protected): a bare repository the agent wrote
    would bring its own config (core.fsmonitor, aliases ...)."""
    root = b.guard.root
    here = start
    if not here.is_relative_to(root):
        return None
    while True:
        if (here / ".git").exists():
            return None
        if (here / "HEAD").is_file() and (here / "objects").is_dir() and (here / "refs").is_dir():
            return here
        if here == root or here.parent == here:
            return None
        here = here.parent


def read_only(b: Builder, sub: str, rest: Args) -> None:
    parsed = check(b, f"git {sub}", READ_SPECS[sub], rest)
    operands = list(parsed.operands)
    if sub == "grep" and not parsed.has("-e", "-f") and operands:
        operands.pop(0)  # the pattern
    if sub == "grep" and parsed.has("--no-index", "--untracked"):
        named = [(i, w) for i, w in operands if parsed.end is not None and i > parsed.end]
        for i, w in named or operands:
            b.arg(i, w, "tree")
        if not operands:
            b.path(None, ".", "tree")
        return
    if sub == "diff" and parsed.has("--no-index"):
        for i, w in operands:
            b.arg(i, w, "tree")
        return
    revisions_and_paths(b, operands, parsed.end)


def revisions_and_paths(b: Builder, operands: list[tuple[int, Word]], end: int | None) -> None:
    """Revisions and pathspecs: `rev:path` shows a file, a path after `--` or an existing
    file is read (its history or diff shows its content)."""
    for j, w in operands:
        after = end is not None and j > end
        if "://" in w.value or re.match(r"[\w.-]+@[\w.-]+:", w.value):
            continue  # a remote URL
        if ":" in w.value and not after and not w.value.startswith(":"):
            inner = w.value.split(":", 1)[1] or "."
            b.path(b.token(j), inner, "meta")
            res = b.resolve(inner)
            if res is not None and res.secret:
                b.add(Risk.SECRET, f"shows the secret file {w.value}", b.token(j))
        elif after or (b.state.known and (b.cwd / w.value).exists()) or not w.static:
            b.arg(j, w, "read")
        elif not b.state.known:
            b.add(Risk.UNDECIDABLE, f"{w.raw}: a path or a revision, the folder is not known")


def config(b: Builder, rest: Args) -> None:
    options = {w.value.split("=", 1)[0] for w in rest if w.value.startswith("-")}
    operands = [
        (i, w)
        for i, w in enumerate(rest)
        if not w.value.startswith("-") and not (i and rest[i - 1].value in _CONFIG_VALUES)
    ]  # option values are not keys
    first = operands[0][1].value if operands else ""
    old_get = len(operands) == 1 and not options and first not in _NEW_WRITES
    if first in ("get", "list") or old_get or options & _CONFIG_READS:
        check(b, "git config", CONFIG_SPEC, rest)
        return
    b.add(Risk.EXEC, "git config changes configuration")
    if "-e" in options or "--edit" in options or first == "edit":
        b.add(Risk.EXEC, "git config --edit starts an editor")
    for g in ("-f", "--file"):
        for i, w in enumerate(rest[:-1]):
            if w.value == g:
                b.arg(i + 1, rest[i + 1], "write")
    if "--global" in options:
        b.path(None, os.path.join(b.guard.home, ".gitconfig"), "write")  # noqa: PTH118
    if first in ("unset", "remove-section") or options & _CONFIG_UNSETS:
        return
    keys = operands[1:2] if first in _NEW_WRITES else operands[:1]
    if first == "rename-section" or "--rename-section" in options:
        keys = operands[-1:]
    for i, w in keys:
        if not w.static:
            b.add(Risk.UNDECIDABLE, "git config: the key is not known before running", b.token(i))
        elif executable_key(w.value):
            b.add(Risk.FORBIDDEN, f"git config {w.value}: configuration that runs programs")
