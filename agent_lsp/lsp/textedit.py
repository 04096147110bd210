"""Minimal text edits: an applied edit touches only the characters that changed, so the other
servers' diagnostics, the cursor and the marks on the rest of a line stay where they are."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

from lsprotocol import types as t

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# Above this many changed lines (old times new) the changed block goes as one span: the line
# matcher is quadratic in the worst case, and so large a rewrite gains little from splitting.
MATCH_LIMIT = 4_000_000


def lsp_lines(text: str) -> list[str]:
    """Lines with their endings, split only where LSP splits (\\n, \\r\\n, \\r)."""
    return _LINE.findall(text)


def utf16_units(text: str) -> int:
    """`text`'s length in UTF-16 code units (a character beyond the BMP counts two)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class _Positions:
    """Offsets in `text` (in code points) as LSP positions, in the client's units."""

    def __init__(self, text: str, units: Callable[[str], int]) -> None:
        self.text = text
        self.lines = lsp_lines(text)
        self.units = units
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def at(self, offset: int) -> t.Position:
        line = bisect_right(self.starts, offset) - 1
        if line >= len(self.lines):  # the very end
            last = self.lines[-1] if self.lines else ""
            if last and not last.endswith(("\n", "\r")):
                return t.Position(line=len(self.lines) - 1, character=self.units(last))
            return t.Position(line=len(self.lines), character=0)
        column = offset - self.starts[line]
        return t.Position(line=line, character=self.units(self.lines[line][:column]))


def _common_prefix(a: str, b: str, limit: int) -> int:
    n = 0
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def _common_suffix(a: str, b: str, limit: int) -> int:
    n = 0
    while n < limit and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return n


def _splits_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"


def _blocks(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """Changed line blocks (old start, old end, new start, new end), in order."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    limit = min(len(a), len(b)) - prefix
    while suffix < limit and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    a_end, b_end = len(a) - suffix, len(b) - suffix
    if (a_end - prefix) * (b_end - prefix) > MATCH_LIMIT:
        return [(prefix, a_end, prefix, b_end)]
    matcher = SequenceMatcher(None, a[prefix:a_end], b[prefix:b_end], autojunk=False)
    return [
        (prefix + i1, prefix + i2, prefix + j1, prefix + j2)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def minimal_edits(old: str, new: str, units: Callable[[str], int]) -> list[t.TextEdit]:
    """TextEdits (ranges in `old`, not overlapping, in order) turning `old` into `new`: each
    changed block of lines trimmed to the characters that differ. `units` counts a string in
    the client's position encoding (UTF-16 by default). A range never ends or starts between
    the \\r and \\n of a line break."""
    if old == new:
        return []
    a, b = lsp_lines(old), lsp_lines(new)
    where = _Positions(old, units)
    new_starts = [0]
    for line in b:
        new_starts.append(new_starts[-1] + len(line))
    edits: list[t.TextEdit] = []
    for i1, i2, j1, j2 in _blocks(a, b):
        start, end = where.starts[i1], where.starts[i2]
        before, after = old[start:end], new[new_starts[j1] : new_starts[j2]]
        limit = min(len(before), len(after))
        head = _common_prefix(before, after, limit)
        tail = _common_suffix(before, after, limit - head)
        if _splits_crlf(old, start + head):
            head -= 1
        if _splits_crlf(old, end - tail):
            tail -= 1
        edits.append(
            t.TextEdit(
                range=t.Range(start=where.at(start + head), end=where.at(end - tail)),
                new_text=after[head : len(after) - tail],
            )
        )
    return edits


def minimal_edit(old: str, new: str, units: Callable[[str], int]) -> t.TextEdit | None:
    """One TextEdit spanning every change (`minimal_edits` as one range), or None."""
    edits = minimal_edits(old, new, units)
    if not edits:
        return None
    if len(edits) == 1:
        return edits[0]
    where = _Positions(old, len)
    offsets = [0]
    for line in where.lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: t.Position) -> int:
        if position.line >= len(where.lines):
            return len(old)
        line = where.lines[position.line]
        column, counted = 0, 0
        while column < len(line) and counted < position.character:
            counted += units(line[column])
            column += 1
        return offsets[position.line] + column

    first, last = offset(edits[0].range.start), offset(edits[-1].range.end)
    tail = len(old) - last
    return t.TextEdit(
        range=t.Range(start=edits[0].range.start, end=edits[-1].range.end),
        new_text=new[first : len(new) - tail],
    )
