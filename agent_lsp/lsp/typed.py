"""What the user typed: the `AGENT:` lines a didChange put in a buffer (`documents.put_in`),
less the lines known not to be the user's.

Known not to be the user's, per document until it is closed: the `AGENT:` lines it held when
the editor opened it (a repository's own text, even inside a string), and those any
`workspace/applyEdit` the server sent put in (the agent's edits, an applied proposal: each edit
is measured before it goes out, `NotTyped.expect`), however the editor splits or joins its
notifications; and a line the file on disk holds (the editor reloaded a file something else
wrote: a command the agent ran, a checkout). The same words typed by the user again are not
taken either: a note is never worth the doubt."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lsprotocol import types as t

from agent_lsp.fileio import read_disk_text
from agent_lsp.lsp.convert import resolved_path
from agent_lsp.lsp.documents import WATCH, LineTextDocument, line_key
from agent_lsp.lsp.held import held_buffers

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

DISK_LIMIT = 8_000_000  # bytes: a bigger file on disk is not read to compare


def _per_document(edit: t.WorkspaceEdit) -> Iterator[tuple[str, list[t.TextEdit]]]:
    for change in edit.document_changes or []:
        if isinstance(change, t.TextDocumentEdit):
            edits = [e for e in change.edits if isinstance(e, t.TextEdit)]
            yield change.text_document.uri, edits
    for uri, edits in (edit.changes or {}).items():
        yield uri, list(edits)


def lines_put_in(server: LanguageServer, old: str, edits: Sequence[t.TextEdit]) -> list[str]:
    """The `WATCH` lines (`line_key`s) that `edits` (ranges in `old`, as LSP has them) put in
    `old`, each edit counted alone."""
    doc = LineTextDocument(
        "untitled:measure",
        source=old,
        sync_kind=t.TextDocumentSyncKind.Incremental,
        position_codec=server.workspace.position_codec,
    )
    last_first = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))
    for edit in reversed(last_first):
        doc.apply_change(t.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text))
    return doc.take_added()


def watched_lines(text: str) -> list[str]:
    return [line_key(line) for line in text.splitlines(True) if WATCH in line]


class NotTyped:
    """Per document, the `AGENT:` lines known not to be the user's typing."""

    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self._known: dict[str, Counter[str]] = {}

    def opened(self, uri: str, text: str) -> None:
        """didOpen: what the file holds was not typed."""
        lines = watched_lines(text) if WATCH in text else []
        if lines:
            self._known.setdefault(uri, Counter()).update(lines)

    def closed(self, uri: str) -> None:
        self._known.pop(uri, None)

    async def expect(self, edit: t.WorkspaceEdit) -> dict[str, list[str]]:
        """Before `edit` is sent: the lines it puts in, per document (give them to `forget`
        if the editor does not apply it)."""
        put: dict[str, list[str]] = {}
        for uri, edits in _per_document(edit):
            if not edits:
                continue
            old = await self._text_before(uri)
            lines = lines_put_in(self.server, old, edits) if old is not None else []
            if lines:
                put[uri] = lines
                self._known.setdefault(uri, Counter()).update(lines)
        return put

    def forget(self, put: dict[str, list[str]]) -> None:
        """An edit the editor did not apply: its lines are no longer expected."""
        for uri, lines in put.items():
            left = self._known.get(uri, Counter()) - Counter(lines)
            if left:
                self._known[uri] = left
            else:
                self._known.pop(uri, None)

    def typed(self, uri: str, added: Sequence[str]) -> list[str]:
        """Of the `WATCH` lines a didChange of `uri` put in (`line_key`s), those the user
        typed."""
        known = self._known.get(uri, Counter())
        left = [line for line in added if known[line] <= 0]
        if left:
            on_disk = _disk_lines(uri)
            left = [line for line in left if line not in on_disk]
        return left

    async def _text_before(self, uri: str) -> str | None:
        doc = self.server.workspace.text_documents.get(uri)
        if doc is not None:
            return doc.source
        path = resolved_path(uri)
        if path is None:
            return None
        held = held_buffers(self.server).get(path)
        if held is not None:
            return held.text
        try:
            return await asyncio.to_thread(read_disk_text, path)
        except OSError:
            return ""  # a new file: everything in it is put in


def _disk_lines(uri: str) -> set[str]:
    path = resolved_path(uri)
    try:
        if path is None or path.stat().st_size > DISK_LIMIT:
            return set()
        text = read_disk_text(path)
    except OSError:
        return set()
    return set(watched_lines(text))
