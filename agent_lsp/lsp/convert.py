"""Conversions between LSP types and the core's LSP-free values."""

from __future__ import annotations

from functools import lru_cache
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


@lru_cache(maxsize=4096)
def resolved_path(uri: str) -> Path | None:
    """`uri_to_path(uri).resolve()`, remembered per URI: code actions and the agent's buffer
    snapshots need it on every call, and resolving costs a system call per path component.
    (A symlink re-pointed while the server runs keeps its old target here.)"""
    path = uri_to_path(uri)
    return path.resolve() if path is not None else None


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
