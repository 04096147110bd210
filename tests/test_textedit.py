from __future__ import annotations

import pytest

from agent_lsp.lsp.textedit import lsp_lines, minimal_edit


def apply(text: str, edit_start: tuple[int, int], edit_end: tuple[int, int], new: str) -> str:
    lines = lsp_lines(text)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return offsets[pos[0]] + pos[1] if pos[0] < len(offsets) else len(text)

    return text[: offset(edit_start)] + new + text[offset(edit_end) :]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb\nc", "a\nb\nC"),  # no final newline
        ("a\nb\n", "a\nb\nc\n"),  # append
        ("a\nb\nc\n", "a\nc\n"),  # delete a line
        ("a\r\nb\r\n", "a\r\nx\r\n"),  # CRLF kept
        ("", "new\n"),
        ("x\n", ""),
        ("a\fb\n", "a\fc\n"),  # form feed is not a line break in LSP
        ("same\nsame\n", "same\nsame\nsame\n"),
    ],
)
def test_minimal_edit_round_trips(old: str, new: str) -> None:
    edit = minimal_edit(old, new, len)
    assert edit is not None
    start = (edit.range.start.line, edit.range.start.character)
    end = (edit.range.end.line, edit.range.end.character)
    assert apply(old, start, end, edit.new_text) == new


def test_minimal_edit_touches_only_changed_lines() -> None:
    old = "".join(f"line {i}\n" for i in range(100))
    new = old.replace("line 50\n", "LINE 50\n")
    edit = minimal_edit(old, new, len)
    assert edit is not None
    assert (edit.range.start.line, edit.range.end.line, edit.new_text) == (50, 51, "LINE 50\n")
    assert minimal_edit(old, old, len) is None
