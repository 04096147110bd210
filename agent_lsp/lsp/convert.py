"""Conversions between LSP types and the core's LSP-free values."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from lsprotocol import types as t

if TYPE_CHECKING:
    from agent_lsp.task import DiagnosticInfo


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def diagnostic_info(diagnostic: t.Diagnostic) -> DiagnosticInfo:
    from agent_lsp.task import DiagnosticInfo

    return DiagnosticInfo(
        message=diagnostic.message,
        line=diagnostic.range.start.line,
        character=diagnostic.range.start.character,
        end_line=diagnostic.range.end.line,
        source=diagnostic.source,
        code=None if diagnostic.code is None else str(diagnostic.code),
        severity=diagnostic.severity.name.lower() if diagnostic.severity else None,
    )
