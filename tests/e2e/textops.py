from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as t

from agent_lsp.lsp.textedit import lsp_lines


def _offset(text: str, pos: t.Position) -> int:
    """A position (UTF-16 units, as the test editors negotiate) as an offset into `text`."""
    lines = lsp_lines(text)
    if pos.line >= len(lines):
        return len(text)
    body = lines[pos.line].rstrip("\r\n").encode("utf-16-le")
    head = body[: pos.character * 2].decode("utf-16-le")  # raises inside a surrogate pair
    return sum(len(line) for line in lines[: pos.line]) + len(head)


def apply_text_edits(text: str, edits: Sequence[t.TextEdit | t.AnnotatedTextEdit]) -> str:
    """Apply edits whose ranges all refer to the original text (LSP's rule), as editors do."""
    spans = sorted(
        ((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits),
        key=lambda span: span[0],
        reverse=True,
    )
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text
