"""The line-list document store gives exactly pygls' text for any sequence of edits."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as t
from pygls.workspace import TextDocument

from agent_lsp.lsp.documents import WATCH, LineTextDocument, line_key

TEXT = st.text(alphabet="ab \n\r\té€😀", max_size=40)


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, int, int, str]]]:
    source = draw(TEXT)
    changes = [
        (
            draw(st.integers(0, 6)),
            draw(st.integers(0, 8)),
            draw(st.integers(0, 6)),
            draw(st.integers(0, 8)),
            draw(TEXT),
        )
        for _ in range(draw(st.integers(1, 6)))
    ]
    return source, changes


def change(a: int, b: int, c: int, d: int, text: str) -> t.TextDocumentContentChangePartial:
    start, end = sorted([(a, b), (c, d)])
    return t.TextDocumentContentChangePartial(
        range=t.Range(
            start=t.Position(line=start[0], character=start[1]),
            end=t.Position(line=end[0], character=end[1]),
        ),
        text=text,
    )


@settings(max_examples=400, deadline=None)
@given(edits())
def test_same_text_as_pygls_after_any_edits(case: tuple[str, list[tuple[int, ...]]]) -> None:
    source, changes = case
    ours = LineTextDocument("file:///x.py", source=source)
    theirs = TextDocument("file:///x.py", source=source)
    for a, b, c, d, text in changes:  # type: ignore[misc]
        ours.apply_change(change(a, b, c, d, text))
        theirs.apply_change(change(a, b, c, d, text))
        assert ours.source == theirs.source
        assert list(ours.lines) == list(theirs.lines)


def test_an_edit_touches_only_its_lines() -> None:
    doc = LineTextDocument("file:///x.py", source="".join(f"line {i}\n" for i in range(20_000)))
    doc.apply_change(change(10_000, 0, 10_000, 0, "# typed\n"))
    assert doc.lines[10_000] == "# typed\n" and doc.lines[10_001] == "line 10000\n"
    assert len(doc.lines) == 20_001 and doc.source.count("\n") == 20_001


MARKED = st.text(alphabet="# AGENT:x\n", max_size=30)


@st.composite
def marked_edits(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, int, int, str]]]:
    source = draw(MARKED)
    changes = [
        (
            draw(st.integers(0, 4)),
            draw(st.integers(0, 12)),
            draw(st.integers(0, 4)),
            draw(st.integers(0, 12)),
            draw(MARKED),
        )
        for _ in range(draw(st.integers(1, 4)))
    ]
    return source, changes


def marked(text: str) -> Counter[str]:
    return Counter(line_key(line) for line in text.splitlines(True) if WATCH in line)


@settings(max_examples=400, deadline=None)
@given(marked_edits(), st.booleans())
def test_every_agent_line_an_edit_brings_is_noted(
    case: tuple[str, list[tuple[int, ...]]], whole: bool
) -> None:
    """Whatever the edits (incremental, or the whole text as some editors send), each AGENT:
    line the buffer holds now and did not before is among those noted as put in."""
    source, changes = case
    doc = LineTextDocument("file:///x.py", source=source)
    for a, b, c, d, text in changes:  # type: ignore[misc]
        before = doc.source
        partial = change(a, b, c, d, text)
        if whole:
            scratch = LineTextDocument("file:///y.py", source=before)
            scratch.apply_change(partial)
            doc.apply_change(t.TextDocumentContentChangeWholeDocument(text=scratch.source))
        else:
            doc.apply_change(partial)
        added = Counter(doc.take_added())
        assert marked(doc.source) - marked(before) <= added
        assert added <= marked(doc.source)
