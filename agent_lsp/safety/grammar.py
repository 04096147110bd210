"""A program's option grammar applied to one part: unknown, abbreviated and dynamic options
make it not read-only, option values that name files are resolved like any path (`--file=`,
`-oFILE`), options known to run programs are findings. Handlers then look at the operands."""

from __future__ import annotations

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.options import Given, Parsed, Spec, parse_args, value_part
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["EFFECT_MODES", "check", "loose_paths", "pathish", "value_path"]

EFFECT_MODES = {"r": "read", "t": "tree", "m": "meta", "w": "write"}


def value_path(b: Builder, g: Given, mode: str) -> None:
    """An option's value used as a path."""
    value = g.value
    if value is None:
        return
    if g.value_index is not None:
        b.arg(g.value_index, value, mode)
    elif value.dynamic or value.brace:
        b.add(
            Risk.UNDECIDABLE,
            f"{g.text}: {value.raw!r} is not known before running",
            b.token(g.index),
        )
    elif value.value:
        b.path(b.token(g.index), value.value, mode)


def check(b: Builder, name: str, sp: Spec, args: list[Word], start: int = 0) -> Parsed:
    """Parse `args` by `sp` and record what the options do; returns the parse."""
    parsed = parse_args(sp, args, start)
    for i, text in parsed.unknown:
        b.add(Risk.EXEC, f"{name} {text}: an option not known to be safe", b.token(i))
    for i, text in parsed.ambiguous:
        b.add(Risk.EXEC, f"{name} {text}: an ambiguous abbreviation", b.token(i))
    for i, w in parsed.dynamic:  # `$X` or `-$X`: may be any option
        b.add(
            Risk.UNDECIDABLE,
            f"{name} {w.raw}: may be an option not known before running",
            b.token(i),
        )
    for g in parsed.given:
        token = b.token(g.index)
        if g.abbrev:
            b.add(Risk.EXEC, f"{name} {g.text}: an abbreviated option ({g.name})", token)
        effect = g.opt.effect
        if effect == "w" and g.value is None:
            b.path(token, ".", "write")  # writes files of its own naming here
        elif effect in EFFECT_MODES:
            value_path(b, g, EFFECT_MODES[effect])
        elif effect == "x":
            b.add(Risk.EXEC, f"{name} {g.name} runs a program", token)
        elif effect == "u":
            b.add(Risk.UNDECIDABLE, f"{name} {g.name}: reads names not known before running", token)
        elif g.value is not None and g.value.variable:
            b.add(Risk.UNDECIDABLE, f"{name} {g.text}: the value is a variable", token)
    return parsed


def pathish(b: Builder, value: str) -> bool:
    """Whether a word of an unknown program names a file: a slash, `~` or `.` first, a
    secret name, or an existing file in the current folder."""
    if not value or "\x00" in value:
        return False
    if "/" in value or value.startswith(("~", ".")):
        return True
    candidate = b.cwd / value
    try:
        return b.guard.is_secret(candidate) or (b.state.known and candidate.exists())
    except (OSError, ValueError):
        return True


def loose_paths(b: Builder, args: list[Word]) -> None:
    """The arguments of a program whose grammar is not known: what looks like a path (an
    operand, or the value of `--opt=value`) is checked as a read."""
    for i, w in enumerate(args):
        if w.value.startswith("-") and len(w.value) > 1:
            key, eq, value = w.value.partition("=")
            if eq and (w.dynamic or pathish(b, value)):
                b.arg(i, value_part(w, len(key) + 1), "read")
        elif w.dynamic or w.brace or w.glob or pathish(b, w.value):
            b.arg(i, w, "read")
