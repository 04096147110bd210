"""What the agent knows about problems in the code: the editor's diagnostics (from code-action
contexts) and agent-lsp's own (test failures), merged and de-duplicated."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from adapters import TestReport
from agent_lsp.task import DiagnosticInfo

EDITOR, TESTS = "editor", "tests"
Listener = Callable[[set[Path]], None]


class DiagnosticStore:
    def __init__(self) -> None:
        self._by_origin: dict[str, dict[Path, list[DiagnosticInfo]]] = {EDITOR: {}, TESTS: {}}
        self.listeners: list[Listener] = []

    def seen_in_editor(self, path: Path, diagnostics: Iterable[DiagnosticInfo]) -> None:
        """Diagnostics an editor sent (e.g. with a code-action request) for `path`."""
        known = self._by_origin[EDITOR].setdefault(path, [])
        for diagnostic in diagnostics:
            if diagnostic not in known:
                known.append(diagnostic)
        del known[:-200]  # bounded

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
        changed = set(new) | set(self._by_origin[TESTS])
        self._by_origin[TESTS] = new
        for listener in self.listeners:
            listener(changed)

    def tests_for(self, path: Path) -> list[DiagnosticInfo]:
        return list(self._by_origin[TESTS].get(path, []))

    def get(self, path: Path | None = None) -> dict[Path, list[DiagnosticInfo]]:
        merged: dict[Path, list[DiagnosticInfo]] = {}
        for origin in self._by_origin.values():
            for file, diagnostics in origin.items():
                if path is not None and file != path:
                    continue
                bucket = merged.setdefault(file, [])
                for diagnostic in diagnostics:
                    key = (diagnostic.line, diagnostic.message)
                    if all((d.line, d.message) != key for d in bucket):
                        bucket.append(diagnostic)
        return merged
