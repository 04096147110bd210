"""Which handler classifies which program: `dispatch` resolves argv[0] (a standard bin folder
path to its name, any other path a file that runs; a name found through PATH inside the
workspace is never read-only) and calls the handler. A program without a handler runs."""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_lsp.safety.archives import ARCHIVE_HANDLERS
from agent_lsp.safety.builder import Builder
from agent_lsp.safety.builtins import BUILTINS
from agent_lsp.safety.fileprogs import FILE_HANDLERS
from agent_lsp.safety.gitcmd import git
from agent_lsp.safety.grammar import loose_paths
from agent_lsp.safety.packages import PACKAGES, package, pip
from agent_lsp.safety.projects import pytest, unittest
from agent_lsp.safety.readers import read_program
from agent_lsp.safety.readspecs import READ_SPECS
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.runners import CODE_FLAGS, NETWORK, SHELLS, interpreter, network, shell
from agent_lsp.safety.search import find, grep, rg
from agent_lsp.safety.shellstate import program_name
from agent_lsp.safety.shellwords import Word
from agent_lsp.safety.textprogs import TEXT_HANDLERS
from agent_lsp.safety.wrappers import WRAPPERS

__all__ = ["dispatch"]

Args = list[Word]
Handler = Callable[[Builder, str, Args], None]
ENV_PRINTERS = frozenset({"printenv", "compgen"})
UNDECIDABLE = frozenset(
    {"shopt", "enable", "pushd", "popd", "trap", "source", ".", "coproc", "hash"}
)
FORBIDDEN = frozenset(
    {"mkfs", "mke2fs", "mkswap", "fdisk", "sfdisk", "cfdisk", "parted", "wipefs", "sgdisk"}
    | {"cryptsetup", "blkdiscard", "hdparm"}
)
DESTRUCTIVE = frozenset({"kill", "killall", "pkill"})
STOPS_MACHINE = frozenset({"shutdown", "reboot", "halt", "poweroff", "init", "telinit"})
SYSTEMCTL_STOPS = frozenset(
    {"poweroff", "reboot", "halt", "kexec", "soft-reboot", "emergency", "rescue", "suspend"}
    | {"hibernate", "hybrid-sleep", "suspend-then-hibernate", "isolate"}
)
# Database clients whose arguments can hold SQL (`psql -c`, `mysql -e`, a URL's query ...):
# dropping a whole database is on the forbidden list, however it is spelled.
SQL_CLIENTS = frozenset(
    {"psql", "mysql", "mariadb", "sqlcmd", "clickhouse-client", "cockroach", "mongosh", "mongo"}
    | {"cqlsh", "sqlplus", "duckdb", "usql", "pgcli", "mycli", "litecli"}
)
_DROP_DB = re.compile(r"\bdrop\s+(database|schema)\b|\bdropDatabase\s*\(", re.IGNORECASE)
PAGERS = frozenset(
    {"less", "more", "most", "pg", "man", "view", "vi", "vim", "nvim", "nano", "emacs", "ed"}
)
_PY = re.compile(r"(python|pypy)[0-9.]*")
_ALIASES = {"nodejs": "node", "powershell": "pwsh", "luajit": "lua", "perl5": "perl"}
SECRET_VAR = re.compile(r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|COOKIE|SESSION", re.I)
HANDLERS: dict[str, Handler] = {
    **WRAPPERS,
    **BUILTINS,
    **FILE_HANDLERS,
    **ARCHIVE_HANDLERS,
    **TEXT_HANDLERS,
    **dict.fromkeys(READ_SPECS, read_program),
    **dict.fromkeys(("grep", "egrep", "fgrep"), grep),
    "rg": rg,
    "find": find,
    "git": git,
    **dict.fromkeys(SHELLS, shell),
    **dict.fromkeys(NETWORK, network),
    **dict.fromkeys(CODE_FLAGS, interpreter),
    **dict.fromkeys(PACKAGES, package),
}


def drops_database(name: str, args: Args) -> bool:
    """`dropdb`, `mysqladmin drop`, or a SQL client given `DROP DATABASE` in an argument."""
    if name == "dropdb":
        return True
    if name == "mysqladmin":
        return any(w.value.lower() in ("drop", "drop-database") for w in args)
    return name in SQL_CLIENTS and any(_DROP_DB.search(w.value) for w in args)


def env_printer(b: Builder, name: str, args: Args) -> None:
    names = [w for w in args if not w.value.startswith(("-", "+"))]
    if name == "printenv" and names:
        if any(SECRET_VAR.search(w.value) or w.dynamic for w in names):
            b.add(Risk.SECRET, "prints a secret environment variable")
        return
    b.add(Risk.SECRET, "prints the environment, which may hold secrets")


def python(b: Builder, name: str, args: Args) -> None:
    """`python -m pytest|unittest|pip ...`; anything else runs code."""
    i = 0
    while i < len(args) and args[i].value in ("-B", "-u", "-q", "-P", "-X", "-W"):
        i += 2 if args[i].value in ("-X", "-W") else 1
    if i + 1 < len(args) and args[i].value == "-m" and args[i + 1].static:
        module, rest = args[i + 1].value, args[i + 2 :]
        saved = b.offset
        b.offset += 2 + i  # the module is argv[0] of what follows
        try:
            if module == "pytest" and i == 0:
                pytest(b, rest)
                return
            if module == "unittest" and i == 0:
                unittest(b, rest)
                return
            if module == "pip":
                pip(b, rest)
                return
            if module in ("http.server", "ensurepip", "smtpd", "ftplib", "webbrowser"):
                network(b, module, rest)
                return
        finally:
            b.offset = saved
    interpreter(b, name, args)


def dispatch(b: Builder, prog: str, args: Args) -> None:
    name = program_name(prog)
    if name is None:
        b.add(Risk.EXEC, f"runs the file {prog}", b.offset)
        b.part.runs_code = True
        loose_paths(b, args)
        return
    if name != prog:  # /usr/bin/git -> git, for deny rules
        b.part.aliases.append([name, *(w.value for w in args)])
    name = "python" if _PY.fullmatch(name) else _ALIASES.get(name, name)
    found = b.host.lookup(name, b.cwd) if b.state.known else None
    if found is not None and b.inside(found):
        b.add(Risk.EXEC, f"{name} is a program inside the workspace ({found})", b.offset)
    handler = HANDLERS.get(name)
    if drops_database(name, args):
        b.add(Risk.FORBIDDEN, f"{name} drops a database")
    if name.startswith("mkfs") or name in FORBIDDEN:
        b.add(Risk.FORBIDDEN, f"{name} formats or wipes disks")
    elif name in STOPS_MACHINE or (
        name == "systemctl" and any(w.value in SYSTEMCTL_STOPS for w in args)
    ):
        b.add(Risk.FORBIDDEN, f"{name} stops or restarts the machine")
    elif name == "python":
        python(b, name, args)
    elif name in ("pytest", "py.test"):
        pytest(b, args)
    elif handler is not None:
        handler(b, name, args)
    elif name in ENV_PRINTERS:
        env_printer(b, name, args)
    elif name in UNDECIDABLE:
        b.add(Risk.UNDECIDABLE, f"{name} changes the shell in ways not followed here")
    elif name in DESTRUCTIVE:
        b.add(Risk.DESTRUCTIVE, f"{name} stops processes")
    else:
        why = "a pager or editor: runs commands typed at it" if name in PAGERS else "runs it"
        b.add(Risk.EXEC, f"{name}: {why}")
        loose_paths(b, args)
