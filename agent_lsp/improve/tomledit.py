"""A line-level editor for the keys an improvement sets in a hand-written `.agent-lsp/config.toml`:
each changed key's line is replaced (its trailing comment kept), removed, or added at the end of
its table (a missing table is appended); every other byte stays as it was. The result is parsed
again and must equal the intended settings table; when it does not (a key written as a dotted
key or in an inline table, a value over several lines), `TomlEditError` says so and nothing is
written."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from typing import Any

from pydantic.alias_generators import to_snake

__all__ = ["TomlEditError", "edit_toml"]

_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\s]+?)\s*\]\s*(#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[")


class TomlEditError(ValueError):
    """The file cannot be edited line by line as asked; the message says why."""


def _tables(lines: Sequence[str]) -> list[tuple[str, int, int]]:
    """(table, first line, end line) of the top level ("") and each `[table]`."""
    spans: list[tuple[str, int, int]] = []
    name, start = "", 0
    for at, line in enumerate(lines):
        header = _HEADER.match(line)
        if header or _ARRAY_HEADER.match(line):
            spans.append((name, start, at))
            name = ".".join(p.strip() for p in header.group(1).split(".")) if header else "[["
            start = at + 1
    spans.append((name, start, len(lines)))
    return spans


def _comment(line: str, key: str) -> str:
    """The line's trailing comment (with the spaces before it), if the rest parses alone."""
    for match in re.finditer("#", line):
        head = line[: match.start()]
        try:
            if key in tomllib.loads(head):
                tail = line[match.start() :].rstrip("\r\n")
                return head[len(head.rstrip()) :] + tail
        except tomllib.TOMLDecodeError:
            continue
    return ""


def _key_line(lines: Sequence[str], start: int, end: int, spellings: Sequence[str]) -> int | None:
    for at in range(start, end):
        for spelling in spellings:
            if re.match(rf"^\s*{re.escape(spelling)}\s*=", lines[at]):
                return at
    return None


def _end_of_values(lines: Sequence[str], start: int, end: int) -> int:
    """Where a new key of the table goes: after its last value, else after its opening
    comments."""
    values = [i for i in range(start, end) if lines[i].strip() and not _is_comment(lines[i])]
    if values:
        return values[-1] + 1
    at = start
    while at < end and _is_comment(lines[at]):
        at += 1
    return at


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def edit_toml(
    text: str,
    changes: Sequence[tuple[tuple[str, ...], Any]],
    render: Callable[[Any], str],
    intended: dict[str, Any],
) -> str:
    """`text` with each (path, value) set (None: removed), `render` writing a value; checked
    against `intended` (what tomllib must read back)."""
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    for path, value in changes:
        table, key = ".".join(path[:-1]), path[-1]
        spellings = [key] if to_snake(key) == key else [key, to_snake(key)]
        span = next((s for s in _tables(lines) if s[0] == table), None)
        if span is None:
            if value is not None:
                gap = newline if lines and lines[-1].strip() else ""
                lines += [gap, f"[{table}]{newline}", f"{key} = {render(value)}{newline}"]
            continue
        _, start, end = span
        at = _key_line(lines, start, end, spellings)
        if at is not None:
            if value is None:
                del lines[at]
            else:
                found = next(
                    s for s in spellings if re.match(rf"^\s*{re.escape(s)}\s*=", lines[at])
                )
                indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
                comment = _comment(lines[at], found)
                lines[at] = f"{indent}{found} = {render(value)}{comment}{newline}"
        elif value is not None:
            lines.insert(_end_of_values(lines, start, end), f"{key} = {render(value)}{newline}")
    out = "".join(lines)
    why = (
        "its keys are not all written one per line in their [table] (a dotted key, an inline "
        "table or a value over several lines), so the change cannot keep the rest of the file"
    )
    try:
        again = tomllib.loads(out)
    except tomllib.TOMLDecodeError as exc:
        raise TomlEditError(f"{why} (the edit would not parse: {exc})") from exc
    if again != intended:
        raise TomlEditError(why)
    return out
