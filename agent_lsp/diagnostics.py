"""What the agent knows about problems in the code: the editor's diagnostics (from code-action
contexts) and agent-lsp's own (test failures), merged and de-duplicated."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from adapters import TestReport
from agent_lsp.task import DiagnosticInfo

EDITOR_PER_FILE = 200  # the newest diagnostics an editor sent for one file
Listener = Callable[[set[Path]], None]
Key = tuple[object, ...]


def _key(diagnostic: DiagnosticInfo) -> Key:
    return (
        diagnostic.line,
        diagnostic.character,
        diagnostic.end_line,
        diagnostic.message,
        diagnostic.source,
        diagnostic.code,
        diagnostic.severity,
    )


class DiagnosticStore:
    """Thread-safe: the editor's side writes from the server's loop while a task reads."""

    def __init__(self) -> None:
        self._editor: dict[Path, dict[Key, DiagnosticInfo]] = {}  # insertion-ordered
        self._tests: dict[Path, list[DiagnosticInfo]] = {}
        self._lock = threading.Lock()
        self.listeners: list[Listener] = []

    def seen_in_editor(self, path: Path, diagnostics: Iterable[DiagnosticInfo]) -> None:
        """Diagnostics an editor sent (e.g. with a code-action request) for `path`; called on
        every code action, so it costs a dict lookup per diagnostic."""
        with self._lock:
            known = self._editor.setdefault(path, {})
            for diagnostic in diagnostics:
                known.setdefault(_key(diagnostic), diagnostic)
            while len(known) > EDITOR_PER_FILE:  # bounded: the oldest go
                del known[next(iter(known))]

    def set_test_results(self, root: Path, report: TestReport) -> None:
        """Replace agent-lsp's own diagnostics with the failures of a full test run."""
        new: dict[Path, list[DiagnosticInfo]] = {}
        for failure in report.failures:
            if not failure.file:
                continue
            line = max((failure.line or 1) - 1, 0)
            message = (
                f"{failure.test_id}: {failure.message}" if failure.message else failure.test_id
            )
            new.setdefault((root / failure.file).resolve(), []).append(
                DiagnosticInfo(message=message, line=line, source="agent-lsp", severity="error")
            )
        with self._lock:
            changed = set(new) | set(self._tests)
            self._tests = new
        for listener in self.listeners:
            listener(changed)

    def tests_for(self, path: Path) -> list[DiagnosticInfo]:
        with self._lock:
            return list(self._tests.get(path, []))

    def get(self, path: Path | None = None) -> dict[Path, list[DiagnosticInfo]]:
        with self._lock:
            origins = [
                {file: list(known.values()) for file, known in self._editor.items()},
                {file: list(found) for file, found in self._tests.items()},
            ]
        merged: dict[Path, dict[tuple[int, str], DiagnosticInfo]] = {}
        for origin in origins:
            for file, diagnostics in origin.items():
                if path is not None and file != path:
                    continue
                bucket = merged.setdefault(file, {})
                for diagnostic in diagnostics:  # one per line and message, the editor's first
                    bucket.setdefault((diagnostic.line, diagnostic.message), diagnostic)
        return {file: list(bucket.values()) for file, bucket in merged.items()}
