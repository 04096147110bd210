"""agent-lsp's own diagnostics per file: test failures, proposals, permission questions — each
kind set separately, published together (a publish replaces all of a server's diagnostics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types as t

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

SOURCE = "agent-lsp"


class AgentDiagnostics:
    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self._by_uri: dict[str, dict[str, list[t.Diagnostic]]] = {}

    def set(self, kind: str, uri: str, diagnostics: Sequence[t.Diagnostic]) -> None:
        kinds = self._by_uri.setdefault(uri, {})
        if not diagnostics and not kinds.get(kind):
            return
        kinds[kind] = list(diagnostics)
        merged = [d for group in kinds.values() for d in group]
        self.server.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=uri, diagnostics=merged)
        )

    def get(self, kind: str, uri: str) -> list[t.Diagnostic]:
        return list(self._by_uri.get(uri, {}).get(kind, []))
