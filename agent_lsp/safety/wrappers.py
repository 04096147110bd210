"""Programs that run another program: `env`, `timeout`, `nice`, `sudo`, `xargs`, `watch`,
`eval`, `busybox` ... The inner command is classified as the program that really runs; only
plain wrappers (timeout, nice, command ...) keep a vetted program vetted. `xargs` always runs
a command it builds from its input: never read-only."""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import spec
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import UNKNOWN, Word

__all__ = ["WRAPPERS"]

Args = list[Word]
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# (flags taking a separate value, is it a plain wrapper: the inner command keeps its meaning)
_SIMPLE: dict[str, tuple[frozenset[str], bool]] = {
    "nice": (frozenset({"-n", "--adjustment"}), True),
    "nohup": (frozenset(), True),
    "setsid": (frozenset(), True),
    "chronic": (frozenset(), True),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), True),
    "ionice": (frozenset({"-c", "-n", "--class", "--classdata"}), True),
    "command": (frozenset(), True),
    "builtin": (frozenset(), True),
    "exec": (frozenset({"-a"}), True),
    "time": (frozenset({"-f", "--format"}), True),
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}), False),
    "doas": (frozenset({"-u", "-C"}), False),
    "pkexec": (frozenset({"--user"}), False),
    "run0": (frozenset({"--user", "-u"}), False),
    "busybox": (frozenset(), False),
    "toybox": (frozenset(), False),
}


_TIMEOUT = spec(
    "-s --signal =",
    "-k --kill-after =",
    "--preserve-status",
    "--foreground",
    "-v --verbose",
    permute=False,
)
_XARGS = spec(
    "-0 --null",
    "-a --arg-file =r",
    "-d --delimiter =",
    "-E =",
    "-e --eof =?",
    "-I =",
    "-i --replace =?",
    "-L =",
    "-l --max-lines =?",
    "-n --max-args =",
    "-o --open-tty",
    "-P --max-procs =",
    "-p --interactive",
    "--process-slot-var =",
    "-r --no-run-if-empty",
    "-s --max-chars =",
    "--show-limits",
    "-t --verbose",
    "-x --exit",
    permute=False,
)


def _inner(b: Builder, args: Args, start: int) -> None:
    if start < len(args):
        b.run(args[start:], b.offset + 1 + start)


def _skip_options(args: Args, takes_value: frozenset[str]) -> int:
    i = 0
    while i < len(args) and args[i].value.startswith("-") and args[i].value != "-":
        if args[i].value == "--":
            return i + 1
        i += 2 if args[i].value in takes_value else 1
    return i


def simple(b: Builder, name: str, args: Args) -> None:
    takes_value, plain = _SIMPLE[name]
    if not plain:
        b.part.plain_wrappers = False
        b.plain = False
        if name not in ("busybox", "toybox"):
            b.add(Risk.EXEC, f"{name} runs a command as another user", b.offset)
    if name == "command" and any(w.value in ("-v", "-V") for w in args):
        b.vet = True
        return  # a lookup, nothing runs
    if name == "exec" and not args:
        b.vet = True  # redirections only
        return
    if name == "time":
        for i, w in enumerate(args[:-1]):
            if w.value in ("-o", "--output"):
                b.arg(i + 1, args[i + 1], "write")
        takes_value = takes_value | {"-o", "--output"}
    _inner(b, args, _skip_options(args, takes_value))


def timeout(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, _TIMEOUT, args)
    if parsed.operands:
        _inner(b, args, parsed.operands[0][0] + 1)


def env(b: Builder, name: str, args: Args) -> None:
    i = 0
    while i < len(args):
        v = args[i].value
        if v in ("-i", "--ignore-environment", "-0", "--null", "-v", "--debug"):
            i += 1
        elif v in ("-u", "--unset"):
            i += 2
        elif v.startswith(("--unset=", "-u")):
            i += 1
        elif v == "--":
            i += 1
            break
        elif v.startswith("-"):
            b.add(Risk.UNDECIDABLE, f"env {v} is not followed here")
            return
        else:
            break
    while i < len(args) and _ASSIGN.match(args[i].value):
        b.part.plain_wrappers = False
        b.plain = False
        b.add(Risk.EXEC, f"sets the variable {args[i].value.split('=')[0]}", b.offset + 1 + i)
        if args[i].variable:
            b.add(Risk.UNDECIDABLE, "a variable is set from a variable", b.offset + 1 + i)
        i += 1
    if i >= len(args):
        b.add(Risk.SECRET, "prints the environment, which may hold secrets")
        return
    _inner(b, args, i)


def xargs(b: Builder, name: str, args: Args) -> None:
    b.part.plain_wrappers = False
    b.plain = False
    b.add(Risk.EXEC, "xargs runs a command built from its input", b.offset)
    parsed = check(b, name, _XARGS, args)
    start = parsed.operands[0][0] if parsed.operands else len(args)
    inner = args[start:] or [Word("echo", "echo")]
    replace = [g.value.value if g.value else "{}" for g in parsed.get("-I", "--replace")]
    if replace:  # the input is pasted into the words holding the replace string
        inner = [
            Word(w.raw, UNKNOWN, dynamic=True) if any(r in w.value for r in replace) else w
            for w in inner
        ]
    b.nested([*inner, Word("{input}", UNKNOWN, dynamic=True)], "xargs")


def watch(b: Builder, name: str, args: Args) -> None:
    b.part.plain_wrappers = False
    b.plain = False
    b.add(Risk.EXEC, "watch runs a command repeatedly", b.offset)
    start = _skip_options(args, frozenset({"-n", "--interval", "-d", "-q"}))
    rest = args[start:]
    if any(w.value in ("-x", "--exec") for w in args[:start]):
        b.nested(rest, "watch")
    elif all(w.static for w in rest):
        b.nested_script(" ".join(w.value for w in rest), "watch")
    else:
        b.add(Risk.UNDECIDABLE, "watch runs a command line not known before running")


def evaluate(b: Builder, name: str, args: Args) -> None:
    b.plain = False
    if all(w.static for w in args):
        b.same_shell_script(" ".join(w.value for w in args), name)
    else:
        b.add(Risk.UNDECIDABLE, f"{name} runs a command line not known before running")


def su(b: Builder, name: str, args: Args) -> None:
    b.part.plain_wrappers = False
    b.plain = False
    b.add(Risk.EXEC, f"{name} runs a command as another user", b.offset)
    for i, w in enumerate(args[:-1]):
        if w.value in ("-c", "--command") and args[i + 1].static:
            b.nested_script(args[i + 1].value, "su -c")
        elif w.value in ("-c", "--command"):
            b.add(Risk.UNDECIDABLE, "su -c runs a command line not known before running")


WRAPPERS: dict[str, Callable[[Builder, str, Args], None]] = {
    **dict.fromkeys(_SIMPLE, simple),
    "timeout": timeout,
    "env": env,
    "xargs": xargs,
    "watch": watch,
    "eval": evaluate,
    "su": su,
}
