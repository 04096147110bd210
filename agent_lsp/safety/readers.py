"""Programs that read files and print (cat, head, ls, diff, sort, wc, date ...): their
arguments are checked against the option grammar of `readspecs`, their operands resolved as
paths. The vetted ones (`VETTED`) cannot run code or write whatever their grammar-known
arguments; the others (tac, base64, iconv, sdiff ...) are read-only but not vetted."""

from __future__ import annotations

import re

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import Parsed
from agent_lsp.safety.readspecs import READ_SPECS
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["VETTED", "read_program"]

VETTED = frozenset(
    {"cat", "head", "tail", "wc", "ls", "dir", "vdir", "stat", "file", "du", "tree", "diff"}
    | {"cmp", "sort", "uniq", "cut", "tr", "nl", "od", "basename", "dirname", "realpath"}
    | {"readlink", "which", "date", "pwd"}
)
META = frozenset({"ls", "dir", "vdir", "stat", "du", "tree", "realpath", "readlink", "file"})
# operands that are strings, not files
STRINGS = frozenset(
    {"tr", "basename", "dirname", "seq", "sleep", "uname", "id", "whoami", "groups", "arch"}
    | {"tty", "logname", "nproc", "which", "pwd", "date"}
)
_OUTPUT_OPERAND = frozenset({"uniq", "xxd"})  # IN OUT: the second operand is written
_LISTS_CWD = frozenset({"ls", "dir", "vdir", "du", "tree"})
_NUMBER = re.compile(r"[0-9]+[kKMGTPEZYB]*|0x[0-9a-fA-F]+")


def read_program(b: Builder, name: str, args: list[Word]) -> None:
    parsed = check(b, name, READ_SPECS[name], args)
    operands = list(parsed.operands)
    unsafe = any(g.opt.effect in ("w", "x", "u") for g in parsed.given)
    if name in STRINGS:
        for i, w in operands:
            if w.variable:
                b.add(Risk.UNDECIDABLE, f"prints a variable ({w.raw}) that may hold a secret")
            elif name == "date" and not w.value.startswith("+"):
                b.add(Risk.EXEC, f"date {w.raw} sets the clock", b.token(i))
                unsafe = True
        b.vet = name in VETTED and parsed.clean and not unsafe and not parsed.has("--file")
        return
    if name in _OUTPUT_OPERAND and len(operands) >= 2:
        i, out = operands.pop(1)
        b.arg(i, out, "write")
        unsafe = True
    if name == "cmp":
        for i, w in operands[2:]:
            if not _NUMBER.fullmatch(w.value):
                b.add(Risk.EXEC, f"cmp {w.raw}: not a byte count", b.token(i))
        operands = operands[:2]
    if name == "sdiff" and parsed.has("--output"):
        b.add(Risk.EXEC, "sdiff -o asks what to merge and may start an editor")
    b.vet = name in VETTED and parsed.clean and not unsafe
    mode = _mode(name, parsed)
    if not operands and name in _LISTS_CWD:
        b.path(None, ".", mode)
    for i, w in operands:
        b.arg(i, w, mode)


def _mode(name: str, parsed: Parsed) -> str:
    """How a program reads its operands, by its options."""
    has = parsed.has
    if name == "diff":  # diff -r follows links unless told not to
        return ("tree" if has("--no-dereference") else "follow") if has("--recursive") else "read"
    if name in ("ls", "dir", "vdir"):
        return "walk" if has("--recursive") and has("--dereference") else "meta"
    if name == "du":
        return "walk" if has("--dereference") else "meta"
    if name == "tree":
        return "walk" if has("-l") else "meta"
    return "meta" if name in META else "read"
