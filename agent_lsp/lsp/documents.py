"""A document store for fast incremental edits.

pygls' `TextDocument` rebuilds the whole text for every `didChange` and splits it into lines on
every access, so a one-character insert into a 20,000-line buffer costs milliseconds. Here the
buffer is a list of lines: an edit replaces only the lines it touches, and the full text is
joined again only when someone reads it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types as t
from pygls.workspace import TextDocument, Workspace


class LineTextDocument(TextDocument):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lines: list[str] | None = None

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
        super()._apply_full_change(change)
        self._lines = None

    def _apply_incremental_change(self, change: t.TextDocumentContentChangePartial) -> None:
        lines = list(self.lines)
        span = self.position_codec.range_from_client_units(lines, change.range)
        first, last = span.start.line, span.end.line
        if first >= len(lines):  # an edit at the very end of the document
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
        self._lines = lines[:start] + region.splitlines(True) + lines[stop:]
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
