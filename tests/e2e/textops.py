from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as t

from agent_lsp.lsp.textedit import lsp_lines


def _offset(text: str, pos: t.Position) -> int:
    lines = lsp_lines(text)
    if pos.line >= len(lines):
        return len(text)
    # ASCII-only fixtures: UTF-16 units equal characters.
    return sum(len(line) for line in lines[: pos.line]) + pos.character


def apply_text_edits(text: str, edits: Sequence[t.TextEdit | t.AnnotatedTextEdit]) -> str:
    ordered = sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    )
    for edit in ordered:
        start, end = _offset(text, edit.range.start), _offset(text, edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text
