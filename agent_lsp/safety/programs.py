"""Program tables and the handlers for reading, printing, network, interpreters and package
managers; `dispatch` picks the handler for argv[0]."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

if TYPE_CHECKING:
    from agent_lsp.safety.classify import Builder

__all__ = ["dispatch", "generic", "has_flag", "pathish", "read_files", "split_args"]

Args = list[Word]
Handler = Callable[["Builder", str, Args], None]

NO_PATHS = frozenset(
    {"echo", "printf", "true", "false", ":", "pwd", "whoami", "id", "groups", "uname", "nproc"}
    | {"seq", "sleep", "arch", "tty", "locale", "getconf", "expr", "basename", "dirname", "test"}
    | {"[", "logname", "uptime", "which", "whereis", "type", "tr", "read", "wait", "shift"}
    | {"exit", "return", "break", "continue", "jobs", "umask", "ulimit", "help"}
)
READ_FILES = frozenset(
    {"cat", "tac", "nl", "head", "tail", "wc", "cut", "paste", "join", "comm", "diff", "cmp"}
    | {"od", "hexdump", "strings", "base64", "base32", "md5sum", "sha1sum", "sha224sum"}
    | {"sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "fold", "fmt", "column"}
    | {"expand", "unexpand", "rev", "iconv", "zcat", "diff3", "sdiff"}
)
META = frozenset({"ls", "dir", "vdir", "stat", "du", "df", "realpath", "readlink", "namei", "file"})
SEARCH = {"grep": False, "egrep": False, "fgrep": False, "rg": True, "ag": True, "ack": True}
SEARCH_VALUES = frozenset(
    {"-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "-g", "-t", "-T", "-j", "--regexp", "--file"}
    | {"--max-count", "--glob", "--type", "--type-not", "--max-depth", "--context"}
)
ENV_PRINTERS = frozenset({"env", "printenv", "set", "export", "declare", "typeset", "compgen"})
VAR_SETTERS = frozenset({"local", "readonly", "unset", "alias", "unalias"})
UNDECIDABLE = frozenset(
    {"shopt", "enable", "pushd", "popd", "trap", "source", ".", "coproc", "hash"}
)
FORBIDDEN = frozenset(
    {"mkfs", "mke2fs", "mkswap", "fdisk", "sfdisk", "cfdisk", "parted", "wipefs", "sgdisk"}
    | {"cryptsetup", "blkdiscard", "hdparm"}
)
DESTRUCTIVE = frozenset(
    {"shutdown", "reboot", "halt", "poweroff", "init", "telinit", "kill", "killall", "pkill"}
)
_PY = re.compile(r"(python|pypy)[0-9.]*")
_ALIASES = {"nodejs": "node", "powershell": "pwsh", "luajit": "lua", "perl5": "perl"}
SECRET_VAR = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)


def split_args(
    args: Args, takes_value: frozenset[str] = frozenset()
) -> tuple[list[tuple[int, Word]], list[tuple[int, Word, Word | None]]]:
    """(operands, options with their separate value) by index into `args`."""
    operands: list[tuple[int, Word]] = []
    options: list[tuple[int, Word, Word | None]] = []
    i, after = 0, False
    while i < len(args):
        w = args[i]
        if after or not w.value.startswith("-") or w.value == "-":
            operands.append((i, w))
        elif w.value == "--":
            after = True
        elif w.value in takes_value and i + 1 < len(args):
            options.append((i, w, args[i + 1]))
            i += 1
        else:
            options.append((i, w, None))
        i += 1
    return operands, options


def has_flag(options: list[tuple[int, Word, Word | None]], letters: str, *long: str) -> bool:
    """Whether a long flag or a short-flag cluster containing one of `letters` was given."""
    for _, w, _ in options:
        v = w.value
        if v in long or (v[:1] == "-" and v[1:2] != "-" and any(c in v[1:] for c in letters)):
            return True
    return False


def pathish(b: Builder, value: str) -> bool:
    """Whether a word names a file: a slash, `~` or `.` first, a secret name, or an existing
    file in the current folder."""
    if not value or "\x00" in value:
        return False
    if "/" in value or value.startswith(("~", ".")):
        return True
    candidate = b.cwd / value
    try:
        return b.guard.is_secret(candidate) or candidate.exists()
    except (OSError, ValueError):
        return True


def option_paths(b: Builder, options: list[tuple[int, Word, Word | None]]) -> None:
    """Option values that look like paths are read (`-f FILE`, `--file=FILE`)."""
    for i, w, val in options:
        if val is not None:
            if val.dynamic:
                b.add(Risk.UNDECIDABLE, f"{val.raw!r} is not known before running")
            elif pathish(b, val.value):
                b.arg(i + 1, val, "read")
        elif w.value.startswith("--") and "=" in w.value:
            value = w.value.split("=", 1)[1]
            if w.dynamic:
                b.add(Risk.UNDECIDABLE, f"{w.raw!r} is not known before running")
            elif pathish(b, value):
                b.path(b.offset + 1 + i, value, "read")
        elif w.dynamic:
            b.add(Risk.UNDECIDABLE, f"{w.raw!r} is not known before running")


def generic(b: Builder, args: Args) -> None:
    """Arguments of a program we know nothing about: path-like words are checked."""
    operands, options = split_args(args)
    option_paths(b, options)
    for i, w in operands:
        if w.dynamic or w.brace or w.glob or pathish(b, w.value):
            b.arg(i, w, "read")


def read_files(b: Builder, name: str, args: Args, mode: str = "read") -> None:
    recursive = SEARCH.get(name, False)
    operands, options = split_args(args, SEARCH_VALUES if name in SEARCH else frozenset())
    option_paths(b, options)
    flags = {w.value for _, w, _ in options}
    if name in SEARCH:
        recursive = (
            recursive
            or bool(flags & {"-r", "-R", "--recursive"})
            or any(f[:1] == "-" and f[1:2] != "-" and ("r" in f or "R" in f) for f in flags)
        )
        if "--pre" in flags or any(f.startswith("--pre=") for f in flags):
            b.add(Risk.EXEC, f"{name} --pre runs a program on every file")
        if not flags & {"-e", "-f", "--regexp", "--file"} and operands:
            _, pattern = operands.pop(0)
            if pattern.variable:
                b.add(Risk.UNDECIDABLE, "the pattern is a variable")
        if recursive and not operands:
            b.path(None, ".", "tree")
    elif name == "diff":
        recursive = bool(flags & {"-r", "--recursive"}) or any(
            f[:1] == "-" and f[1:2] != "-" and "r" in f for f in flags
        )
    for i, w in operands:
        b.arg(i, w, "tree" if recursive else mode)


def no_paths(b: Builder, name: str, args: Args) -> None:
    for w in args:
        if w.variable:
            b.add(Risk.UNDECIDABLE, f"prints a variable ({w.raw}) that may hold a secret")
    if name == "date" and any(w.value in ("-s", "--set") for w in args):
        b.add(Risk.EXEC, "sets the clock")


def env_printer(b: Builder, name: str, args: Args) -> None:
    options = [w.value for w in args if w.value.startswith(("-", "+"))]
    names = [w for w in args if not w.value.startswith(("-", "+"))]
    if name == "printenv" and names:
        if any(SECRET_VAR.search(w.value) or w.dynamic for w in names):
            b.add(Risk.SECRET, "prints a secret environment variable")
        return
    if name == "set" and options and not names:
        return  # set -e, set -o pipefail
    if names:
        b.add(Risk.EXEC, f"{name} sets variables")
    elif name != "set" or not options:
        b.add(Risk.SECRET, "prints the environment, which may hold secrets")


def dispatch(b: Builder, prog: str, args: Args) -> None:
    from agent_lsp.safety.classify import program_name
    from agent_lsp.safety.fileprogs import FILE_HANDLERS
    from agent_lsp.safety.gitcmd import git
    from agent_lsp.safety.runners import (
        CODE_FLAGS,
        NETWORK,
        PACKAGES,
        SHELLS,
        interpreter,
        network,
        package,
        shell,
    )
    from agent_lsp.safety.wrappers import WRAPPERS

    name = program_name(prog)
    if name is None:
        b.add(Risk.EXEC, f"runs the file {prog}", b.offset)
        b.part.runs_code = True
        generic(b, args)
        return
    if name != prog:  # /usr/bin/git -> git, for deny rules
        b.part.aliases.append([name, *(w.value for w in args)])
    name = "python" if _PY.fullmatch(name) else _ALIASES.get(name, name)
    found = b.cls.lookup(name, b.cwd)
    if found is not None and b.guard.describe(found).inside:
        b.add(Risk.EXEC, f"{name} is a program inside the workspace ({found})", b.offset)
    if name.startswith("mkfs") or name in FORBIDDEN:
        b.add(Risk.FORBIDDEN, f"{name} formats or wipes disks")
    elif name in WRAPPERS:
        WRAPPERS[name](b, name, args)
    elif name in FILE_HANDLERS:
        FILE_HANDLERS[name](b, name, args)
    elif name == "git":
        git(b, args)
    elif name in NO_PATHS or name == "date" or (name == "hostname" and not args):
        no_paths(b, name, args)
    elif name in READ_FILES or name in SEARCH:
        read_files(b, name, args)
    elif name in META:
        read_files(b, name, args, "meta")
    elif name in ENV_PRINTERS:
        env_printer(b, name, args)
    elif name in VAR_SETTERS:
        b.add(Risk.EXEC, f"{name} changes shell state")
    elif name in UNDECIDABLE:
        b.add(Risk.UNDECIDABLE, f"{name} changes the shell in ways not followed here")
    elif name in DESTRUCTIVE:
        b.add(Risk.DESTRUCTIVE, f"{name} stops processes or the machine")
    elif name in NETWORK:
        network(b, name, args)
    elif name in SHELLS:
        shell(b, name, args)
    elif name in CODE_FLAGS:
        interpreter(b, name, args)
    elif name in PACKAGES:
        package(b, name, args)
    else:
        b.add(Risk.EXEC, f"runs {name}")
        generic(b, args)
