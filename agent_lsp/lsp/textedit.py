"""Minimal line-based text edits, so an applied edit touches only the lines that changed."""

from __future__ import annotations

import re
from collections.abc import Callable

from lsprotocol import types as t

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lsp_lines(text: str) -> list[str]:
    """Lines with their endings, split only where LSP splits (\\n, \\r\\n, \\r)."""
    return _LINE.findall(text)


def minimal_edit(old: str, new: str, units: Callable[[str], int]) -> t.TextEdit | None:
    """One TextEdit turning `old` into `new`; `units` counts a string in the client's encoding."""
    if old == new:
        return None
    a, b = lsp_lines(old), lsp_lines(new)
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(a), len(b)) - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]
    ):
        suffix += 1
    end_index = len(a) - suffix
    if end_index < len(a):
        end = t.Position(line=end_index, character=0)
    elif a and not a[-1].endswith(("\n", "\r")):
        end = t.Position(line=len(a) - 1, character=units(a[-1]))
    else:
        end = t.Position(line=len(a), character=0)
    return t.TextEdit(
        range=t.Range(start=t.Position(line=prefix, character=0), end=end),
        new_text="".join(b[prefix : len(b) - suffix]),
    )
