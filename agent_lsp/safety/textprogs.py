"""Text tools whose scripts may write files or run commands (sed, awk, jq), and the ones
that name an output file (sort -o, uniq IN OUT, xxd IN OUT, tree -o)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent_lsp.safety.programs import has_flag, option_paths, split_args
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

if TYPE_CHECKING:
    from agent_lsp.safety.classify import Builder

__all__ = ["TEXT_HANDLERS"]

Args = list[Word]
_VALUES: dict[str, frozenset[str]] = {
    "sort": frozenset({"-k", "-t", "-S", "-T", "-o", "--output", "--key"}),
    "xxd": frozenset({"-l", "-s", "-c", "-g", "-o", "-n"}),
    "tree": frozenset({"-o", "-P", "-I", "-L", "--charset"}),
    "jq": frozenset({"-f", "--from-file", "--arg", "--argjson", "--indent"}),
}
_SED_SAFE_FLAGS = re.compile(r"[gpiImM0-9]*")
_AWK_UNSAFE = re.compile(r"system|\||>|getline|close|fflush|ENVIRON|PROCINFO|@load")


def sed(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args, frozenset({"-e", "-f", "--expression", "--file", "-l"}))
    in_place = has_flag(options, "i", "--in-place") or any(
        w.value.startswith("--in-place") for _, w, _ in options
    )
    scripts = [v for _, w, v in options if w.value in ("-e", "--expression") and v is not None]
    files = [(i + 1, v) for i, w, v in options if w.value in ("-f", "--file") and v is not None]
    for i, f in files:
        b.arg(i, f, "read")
    if not scripts and not files and operands:
        scripts.append(operands.pop(0)[1])
    for script in scripts:
        if not script.static or not _sed_safe(script.value):
            b.add(Risk.EXEC, "the sed script may write files or run commands")
    if files:
        b.add(Risk.EXEC, "runs a sed script file")
    for i, w in operands:
        b.arg(i, w, "write" if in_place else "read")


def _sed_safe(script: str) -> bool:
    """No w/W/e/r/R commands and no w/e flags on s///."""
    i = 0
    while i < len(script):
        c = script[i]
        if c in "sy" and i + 1 < len(script) and script[i + 1] not in "\n;":
            delim, i, parts = script[i + 1], i + 2, 0
            while i < len(script) and parts < 2:
                if script[i] == "\\":
                    i += 1
                elif script[i] == delim:
                    parts += 1
                i += 1
            flags = re.match(r"[a-zA-Z0-9]*", script[i:])
            if parts < 2 or (flags and not _SED_SAFE_FLAGS.fullmatch(flags.group())):
                return False
            i += len(flags.group()) if flags else 0
        elif c in "/\\":
            end = script.find("/", i + 1)
            if end < 0:
                return False
            i = end + 1
        elif c in "wWeErRvzFQ":
            return False
        elif c in "aic":
            end = script.find("\n", i)
            i = len(script) if end < 0 else end
        else:
            i += 1
    return True


def awk(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args, frozenset({"-f", "-v", "-F", "--file", "--assign"}))
    if any(w.value in ("-f", "--file") for _, w, _ in options):
        b.add(Risk.EXEC, "runs an awk program file")
    elif operands:
        _, program = operands.pop(0)
        if not program.static or _AWK_UNSAFE.search(program.value):
            b.add(Risk.EXEC, "the awk program may write files or run commands")
    for i, w in operands:
        if "=" not in w.value:
            b.arg(i, w, "read")


def outputs(b: Builder, name: str, args: Args) -> None:
    """sort -o, uniq IN OUT, xxd IN OUT, tree -o: read, and write the named output."""
    operands, options = split_args(args, _VALUES.get(name, frozenset()))
    for i, w, v in options:
        if w.value in ("-o", "--output") and v is not None and name in ("sort", "tree"):
            b.arg(i + 1, v, "write")
        elif w.value.startswith("--compress-program"):
            b.add(Risk.EXEC, "sort runs a compression program")
    if name in ("uniq", "xxd") and len(operands) >= 2:
        i, out = operands.pop(1)
        b.arg(i, out, "write")
    for i, w in operands:
        b.arg(i, w, "meta" if name == "tree" else "read")


def jq(b: Builder, name: str, args: Args) -> None:
    operands, options = split_args(args, _VALUES["jq"])
    if not any(w.value in ("-f", "--from-file") for _, w, _ in options) and operands:
        _, program = operands.pop(0)
        if not program.static or "env" in program.value.lower():
            b.add(Risk.SECRET, "the jq program reads the environment")
    option_paths(b, options)
    for i, w in operands:
        b.arg(i, w, "read")


TEXT_HANDLERS: dict[str, Callable[[Builder, str, Args], None]] = {
    "sed": sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), awk),
    **dict.fromkeys(("sort", "uniq", "xxd", "tree"), outputs),
    "jq": jq,
}
