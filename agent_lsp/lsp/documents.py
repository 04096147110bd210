"""A document store for fast incremental edits.

pygls' `TextDocument` rebuilds the whole text for every `didChange` and splits it into lines on
every access, so a one-character insert into a 20,000-line buffer costs milliseconds. Here the
buffer is a list of lines: an edit replaces only the lines it touches, and the full text is
joined again only when someone reads it.

Each edit also notes the lines holding `WATCH` ("AGENT:", the steer lines) that it put in (the
lines of its region after it, less those before it): `take_added()` hands them over. They are
what a didChange brought, which steering compares with what the server's own edits put in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from lsprotocol import types as t
from pygls.workspace import TextDocument, Workspace

WATCH = "AGENT:"


def line_key(line: str) -> str:
    """A line as steering compares it: its words, whitespace (line ending, indentation, trailing
    blanks an editor may trim) left out."""
    return " ".join(line.split())


def put_in(before: Sequence[str], after: Sequence[str]) -> list[str]:
    """The lines holding `WATCH` in `after` and not in `before` (as many times as they are
    more), as `line_key`s."""
    old = Counter(line_key(line) for line in before if WATCH in line)
    new = Counter(line_key(line) for line in after if WATCH in line)
    return list((new - old).elements())


class LineTextDocument(TextDocument):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lines: list[str] | None = None
        self._added: list[str] = []

    def take_added(self) -> list[str]:
        """The `WATCH` lines the edits since the last call put in (see `put_in`)."""
        added, self._added = self._added, []
        return added

    @property
    def source(self) -> str:
        if self._source is None and self._lines is not None:
            self._source = "".join(self._lines)
        return super().source

    @property
    def lines(self) -> Sequence[str]:
        if self._lines is None:
            self._lines = self.source.splitlines(True)
        return self._lines

    def _apply_full_change(self, change: t.TextDocumentContentChangeEvent) -> None:
        if WATCH in change.text:
            old, new = list(self.lines), change.text.splitlines(True)
            head = 0
            while head < min(len(old), len(new)) and old[head] == new[head]:
                head += 1
            tail = 0
            while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
                tail += 1
            self._added += put_in(old[head : len(old) - tail], new[head : len(new) - tail])
        super()._apply_full_change(change)
        self._lines = None

    def _apply_incremental_change(self, change: t.TextDocumentContentChangePartial) -> None:
        lines = list(self.lines)
        span = self.position_codec.range_from_client_units(lines, change.range)
        first, last = span.start.line, span.end.line
        if first >= len(lines):  # an edit at the very end of the document
            last_line = lines[-1:]
            if WATCH in "".join(last_line) + change.text:
                self._added += put_in(last_line, ("".join(last_line) + change.text).splitlines())
            self._set("".join(lines) + change.text)
            return
        last = min(last, len(lines) - 1)
        end_col = span.end.character if span.end.line <= last else len(lines[last])
        text = lines[first][: span.start.character] + change.text + lines[last][end_col:]
        # Re-split across the neighbouring lines too, so a line ending that the edit splits
        # or joins (a CR before an inserted LF, a removed newline) comes out as pygls would.
        start = max(first - 1, 0)
        stop = min(last + 2, len(lines))
        region = "".join(lines[start:first]) + text + "".join(lines[last + 1 : stop])
        put = region.splitlines(True)
        if WATCH in region:
            self._added += put_in(lines[start:stop], put)
        self._lines = lines[:start] + put + lines[stop:]
        self._source = None

    def _set(self, source: str) -> None:
        self._source = source
        self._lines = None


class LineStoreWorkspace(Workspace):
    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LineTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def use_line_store(workspace: Workspace) -> None:
    """Make `workspace` create `LineTextDocument`s (it is built by pygls before our hooks)."""
    workspace.__class__ = LineStoreWorkspace
