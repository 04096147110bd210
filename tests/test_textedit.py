from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest
from lsprotocol import types as t

from agent_lsp.lsp.textedit import lsp_lines, minimal_edit, minimal_edits, utf16_units


def _offset(text: str, position: t.Position, encoding: str) -> int:
    """An LSP position as an offset into `text`, counting the line in `encoding`'s units (the
    way an editor does it; independent of the code under test)."""
    lines = lsp_lines(text)
    if position.line >= len(lines):
        assert position == t.Position(line=len(lines), character=0)
        return len(text)
    line = lines[position.line]
    body = line.rstrip("\r\n")
    width = 2 if encoding == "utf-16-le" else 4
    encoded = body.encode(encoding)
    assert position.character * width <= len(encoded), "position beyond the line's end"
    head = encoded[: position.character * width].decode(encoding)  # fails inside a surrogate
    return sum(len(x) for x in lines[: position.line]) + len(head)


def apply(text: str, edits: Sequence[t.TextEdit], encoding: str = "utf-16-le") -> str:
    spans = [
        (_offset(text, e.range.start, encoding), _offset(text, e.range.end, encoding))
        for e in edits
    ]
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, "edits overlap or are out of order"
    for (start, end), edit in sorted(
        zip(spans, edits, strict=True), key=lambda s: s[0], reverse=True
    ):
        text = text[:start] + edit.new_text + text[end:]
    return text


CASES = [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb\nc", "a\nb\nC"),  # no final newline
    ("a\nb\n", "a\nb\nc\n"),  # append
    ("a\nb\nc\n", "a\nc\n"),  # delete a line
    ("a\r\nb\r\n", "a\r\nx\r\n"),  # CRLF kept
    ("a\r\nb", "a\rb"),  # a CRLF becomes a CR: never a position between \r and \n
    ("a\rb\n", "a\r\nb\n"),  # and back
    ("a\r\nb\r\n", "a\nb\n"),
    ("", "new\n"),
    ("x\n", ""),
    ("a\fb\n", "a\fc\n"),  # form feed is not a line break in LSP
    ("same\nsame\n", "same\nsame\nsame\n"),
    ("emoji 😀 here\n", "emoji 😀 there\n"),  # beyond the BMP: two UTF-16 units
    ("😀😁\n", "😀😂\n"),  # same high surrogate: the edit must not split the pair
    ("é\u0301x\n", "é\u0301y\n"),
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_minimal_edits_round_trip_in_utf16(old: str, new: str) -> None:
    edits = minimal_edits(old, new, utf16_units)
    assert edits
    assert apply(old, edits) == new
    single = minimal_edit(old, new, utf16_units)
    assert single is not None and apply(old, [single]) == new


@pytest.mark.parametrize(("old", "new"), CASES)
def test_minimal_edits_round_trip_in_utf32(old: str, new: str) -> None:
    assert apply(old, minimal_edits(old, new, len), "utf-32-le") == new


def test_random_texts_round_trip() -> None:
    rng = random.Random(13)
    alphabet = ["a", "b", " ", "\n", "\r\n", "\r", "😀", "é", "\t"]
    for _ in range(2000):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        chars = list(old)
        for _ in range(rng.randint(1, 4)):
            at = rng.randint(0, len(chars))
            if chars and rng.random() < 0.5:
                del chars[min(at, len(chars) - 1)]
            else:
                chars.insert(at, rng.choice(alphabet))
        new = "".join(chars)
        assert apply(old, minimal_edits(old, new, utf16_units)) == new, (old, new)


def test_an_edit_inside_a_line_keeps_the_rest_of_the_line() -> None:
    old = "".join(f"line {i}\n" for i in range(100))
    new = old.replace("line 50\n", "LINE 50\n")
    (edit,) = minimal_edits(old, new, utf16_units)
    assert edit == t.TextEdit(
        range=t.Range(start=t.Position(line=50, character=0), end=t.Position(line=50, character=4)),
        new_text="LINE",
    )
    assert minimal_edits(old, old, utf16_units) == []
    assert minimal_edit(old, old, utf16_units) is None


def test_a_fix_touches_only_the_changed_characters_in_utf16() -> None:
    old = "s = '😀'; total = sum(valeus)  # note\n"
    new = "s = '😀'; total = sum(values)  # note\n"
    (edit,) = minimal_edits(old, new, utf16_units)
    # "valeus" -> "values": only "eu" -> "ue", at UTF-16 column 25 (the emoji counts two)
    assert edit == t.TextEdit(
        range=t.Range(start=t.Position(line=0, character=25), end=t.Position(line=0, character=27)),
        new_text="ue",
    )


def test_changes_far_apart_are_separate_small_edits() -> None:
    old = "".join(f"value_{i} = {i}\n" for i in range(50))
    new = old.replace("value_3 = 3", "value_3 = 30").replace("value_40 = 40", "value_40 = 4")
    edits = minimal_edits(old, new, utf16_units)
    assert [
        (e.range.start.line, e.range.start.character, e.range.end.character, e.new_text)
        for e in edits
    ] == [
        (3, 11, 11, "0"),
        (40, 12, 13, ""),
    ]
    assert apply(old, edits) == new
