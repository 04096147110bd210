"""Shell builtins: printing (`echo`, `printf`), tests (`test`, `[`), `read`, `cd` (followed the
way bash's logical `cd` works), `set`, and the builtins that set variables. A name with a
subscript (`x[$(cmd)]`) is evaluated as arithmetic by bash and runs the substitution; a
variable such as PATH, HOME or IFS changes what later commands do: neither is read-only."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import spec
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["BUILTINS"]

Args = list[Word]
SAFE_NAME = re.compile(r"[a-z_][a-z0-9_]*")  # never a special variable (PATH, HOME, IFS ...)
_INT = re.compile(r"-?[0-9]+")
_FILE_TESTS = frozenset("-" + c for c in "abcdefghkprsuwxGLNOS")
_FILE_PAIRS = frozenset({"-ef", "-nt", "-ot"})
READ = spec("-a =", "-d =", "-e", "-E", "-i =", "-n =", "-N =", "-p =", "-r", "-s", "-t =", "-u =")
CD = spec("-L", "-P", "-e", "-@", permute=False)
_SET_FLAGS = frozenset("euxnvCfbmETh")
_SET_OPTIONS = frozenset(
    {"errexit", "nounset", "xtrace", "pipefail", "noclobber", "noexec", "verbose", "noglob"}
    | {"errtrace", "functrace", "monitor", "notify", "hashall"}
)


def _names(b: Builder, name: str, words: list[tuple[int, Word]]) -> bool:
    """Variable names a builtin assigns: lower-case plain names only; whether all were."""
    ok = True
    for i, w in words:
        if "[" in w.value or not w.static:
            b.add(Risk.UNDECIDABLE, f"{name} {w.raw}: a subscript runs as arithmetic", b.token(i))
            ok = False
        elif not SAFE_NAME.fullmatch(w.value.split("=", 1)[0]):
            b.add(Risk.EXEC, f"{name} sets {w.raw}, which may change how commands run", b.token(i))
            ok = False
    return ok


def _prints(b: Builder, words: Args) -> None:
    for w in words:
        if w.variable:
            b.add(Risk.UNDECIDABLE, f"prints a variable ({w.raw}) that may hold a secret")


def echo(b: Builder, name: str, args: Args) -> None:
    _prints(b, args)
    b.vet = True


def printf(b: Builder, name: str, args: Args) -> None:
    rest = args
    if rest and rest[0].value.startswith("-v"):
        target = rest[0].value[2:]
        where = (0, Word(rest[0].raw, target, rest[0].dynamic))
        if not target and len(rest) > 1:
            where, rest = (1, rest[1]), rest[1:]
        b.add(Risk.EXEC, "printf -v sets a variable", b.token(0))
        _names(b, "printf -v", [where])
        _prints(b, rest[1:])
        return
    _prints(b, rest)
    b.vet = True


def nothing(b: Builder, name: str, args: Args) -> None:
    """true, false, :, jobs, times, help: nothing to check."""
    b.vet = True


def numbers(b: Builder, name: str, args: Args) -> None:
    """exit, return, shift, break, continue: a number at most."""
    for i, w in enumerate(args):
        if not _INT.fullmatch(w.value):
            b.add(Risk.UNDECIDABLE, f"{name} {w.raw}: not a plain number", b.token(i))
    b.vet = True


def wait(b: Builder, name: str, args: Args) -> None:
    for i, w in enumerate(args):
        if w.value.startswith("-p"):
            b.add(Risk.EXEC, "wait -p sets a variable", b.token(i))
            target = (i, Word(w.raw, w.value[2:], w.dynamic)) if w.value != "-p" else None
            if target is None and i + 1 < len(args):
                target = (i + 1, args[i + 1])
            if target is not None:
                _names(b, "wait -p", [target])
        elif not (w.value in ("-n", "-f") or re.fullmatch(r"%?[0-9]+|%[%+-]", w.value)):
            b.add(Risk.UNDECIDABLE, f"wait {w.raw}: not a job", b.token(i))
    b.vet = True


def test(b: Builder, name: str, args: Args) -> None:
    words = list(enumerate(args))
    if name == "[":
        if not words or words[-1][1].value != "]":
            b.add(Risk.UNDECIDABLE, "[ without ]")
        words = words[:-1]
    vet = True
    skip = False
    for n, (i, w) in enumerate(words):
        if skip:
            skip = False
            continue
        if not w.static:
            b.add(Risk.UNDECIDABLE, f"{name} {w.raw}: not known before running", b.token(i))
            vet = False
        elif w.value in ("-v", "-R"):
            b.add(Risk.EXEC, f"{name} {w.value} looks a variable up (subscripts run)", b.token(i))
            if n + 1 < len(words):
                _names(b, f"{name} {w.value}", [words[n + 1]])
            vet, skip = False, True
        elif w.value in _FILE_TESTS and n + 1 < len(words):
            b.arg(words[n + 1][0], words[n + 1][1], "meta")
            skip = True
        elif w.value in _FILE_PAIRS and 0 < n < len(words) - 1:
            for j, other in (words[n - 1], words[n + 1]):
                b.arg(j, other, "meta")
    b.vet = vet


def read(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, READ, args)
    names = list(parsed.operands)
    for g in parsed.get("-a"):
        if g.value is not None:
            names.append((g.value_index if g.value_index is not None else g.index, g.value))
    _names(b, name, names)


def cd(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, CD, args)
    physical = bool(parsed.given) and parsed.given[-1].name == "-P"
    operands = parsed.operands
    state = b.state
    b.vet = True
    state.change(b.scope)  # whatever happens, it ends with the subshell
    if len(operands) > 1 or not parsed.clean:
        b.add(Risk.UNDECIDABLE, "cd: these arguments are not followed here")
        state.known = False
        return
    token, text = None, str(b.guard.home)
    if operands:
        i, w = operands[0]
        token = b.token(i)
        if w.value in ("-", "") or not w.static:
            b.add(Risk.UNDECIDABLE, f"cd {w.raw}: the folder is not known before running", token)
            state.known = False
            return
        text = w.value
    if not state.known and not text.startswith("/"):
        b.add(Risk.UNDECIDABLE, f"cd {text}: relative to a folder not known", token)
        return
    target = _target(b, text, physical)
    if target is None:
        state.known = False  # cd fails: later parts run in a folder not known here
        return
    b.path(token, target[1], "meta")  # where the logical path leads
    if not b.clean:
        state.known = False
        return
    state.cwd, state.pwd = target
    state.known = True
    state.chain = b.chained


def _canonical(pwd: str, text: str) -> str | None:
    """bash's logical path: `..` removes the previous name, which must be a folder."""
    path = [] if text.startswith("/") else [p for p in pwd.split("/") if p]
    for name in text.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not Path("/" + "/".join(path)).is_dir():
                return None
            path = path[:-1]
        else:
            path.append(name)
    return "/" + "/".join(path)


def _target(b: Builder, text: str, physical: bool) -> tuple[Path, str] | None:
    """(physical, logical) folder after `cd text`; None when it would fail."""
    state = b.state
    if not physical:
        logical = _canonical(state.pwd, text)
        if logical is not None and Path(logical).is_dir() and os.access(logical, os.X_OK):
            return Path(os.path.realpath(logical)), logical
    verbatim = Path(text) if text.startswith("/") else state.cwd / text
    if verbatim.is_dir() and os.access(verbatim, os.X_OK):
        real = Path(os.path.realpath(verbatim))
        return real, str(real)
    return None


def set_builtin(b: Builder, name: str, args: Args) -> None:
    if not args:
        b.add(Risk.SECRET, "set prints every variable, which may hold secrets")
        return
    i = 0
    while i < len(args):
        v = args[i].value
        if v in ("--", "-"):
            break
        if v in ("-o", "+o"):
            option = args[i + 1].value if i + 1 < len(args) else ""
            if option and option not in _SET_OPTIONS:
                b.add(Risk.UNDECIDABLE, f"set {v} {option} changes the shell in ways not followed")
            i += 2
            continue
        if v[:1] not in "-+" or not set(v[1:]) <= _SET_FLAGS:
            b.add(Risk.UNDECIDABLE, f"set {args[i].raw} changes the shell in ways not followed")
        i += 1
    b.vet = True


def setter(b: Builder, name: str, args: Args) -> None:
    """declare, typeset, export, local, readonly, unset, let, getopts, mapfile ..."""
    operands = [(i, w) for i, w in enumerate(args) if not w.value.startswith(("-", "+"))]
    if not operands and name in ("declare", "typeset", "export", "readonly", "local"):
        b.add(Risk.SECRET, f"{name} prints variables, which may hold secrets")
        return
    b.add(Risk.EXEC, f"{name} sets variables or shell state")
    if name == "let":
        b.add(Risk.UNDECIDABLE, "let evaluates arithmetic (a subscript runs commands)")
    for i, w in operands:
        if "[" in w.value or not w.static:
            b.add(Risk.UNDECIDABLE, f"{name} {w.raw}: a subscript runs as arithmetic", b.token(i))


def shell_state(b: Builder, name: str, args: Args) -> None:
    """umask, ulimit, hostname, type: show without operands, change with them."""
    shows = all(w.value in ("-S", "-p", "-a", "-H", "-t", "-P", "-f") for w in args)
    if name == "type":
        b.vet = True
    elif not shows:
        b.add(Risk.EXEC, f"{name} changes settings")


_SETTERS = (
    *("declare", "typeset", "export", "local", "readonly", "unset", "let", "getopts"),
    *("mapfile", "readarray", "alias", "unalias", "complete", "bind", "fc", "history"),
    *("disown", "suspend", "logout", "compopt"),
)
BUILTINS = {
    "echo": echo,
    "printf": printf,
    **dict.fromkeys(("true", "false", ":", "jobs", "times", "help", "dirs", "caller"), nothing),
    **dict.fromkeys(("exit", "return", "shift", "break", "continue"), numbers),
    "wait": wait,
    "test": test,
    "[": test,
    "read": read,
    "cd": cd,
    "set": set_builtin,
    **dict.fromkeys(_SETTERS, setter),
    **dict.fromkeys(("umask", "ulimit", "hostname", "type"), shell_state),
}
