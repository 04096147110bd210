"""What the agent knows about problems in the code: the editor's diagnostics (from code-action
contexts) and agent-lsp's own (test failures), merged and de-duplicated."""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable, Iterable, Sequence
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
        self._tests: dict[Path, list[tuple[str, DiagnosticInfo]]] = {}  # (owner, diagnostic)
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

    def set_test_results(
        self, root: Path, report: TestReport, ran: Sequence[str] | None = None
    ) -> None:
        """Replace agent-lsp's own diagnostics with the failures of a test run: all of them
        for a full run (`ran` None); for a targeted run, those of the tests it ran (`ran`:
        the files, folders or `file::name` targets, relative to `root`), the others kept."""
        new: dict[Path, list[tuple[str, DiagnosticInfo]]] = {}
        for failure in report.failures:
            if not failure.file:
                continue
            line = max((failure.line or 1) - 1, 0)
            message = (
                f"{failure.test_id}: {failure.message}" if failure.message else failure.test_id
            )
            new.setdefault((root / failure.file).resolve(), []).append(
                (
                    _owner(failure.test_id, failure.file),
                    DiagnosticInfo(
                        message=message, line=line, source="agent-lsp", severity="error"
                    ),
                )
            )
        with self._lock:
            if ran is not None:  # keep what the run did not run
                for path, known in self._tests.items():
                    kept = [(o, d) for o, d in known if not any(_covers(t, o) for t in ran)]
                    if kept:
                        new.setdefault(path, [])[:0] = kept
            changed = {p for p in set(new) | set(self._tests) if new.get(p) != self._tests.get(p)}
            self._tests = new
        for listener in self.listeners:
            listener(changed)

    def tests_for(self, path: Path) -> list[DiagnosticInfo]:
        with self._lock:
            return [diagnostic for _, diagnostic in self._tests.get(path, [])]

    def get(self, path: Path | None = None) -> dict[Path, list[DiagnosticInfo]]:
        with self._lock:
            origins = [
                {file: list(known.values()) for file, known in self._editor.items()},
                {file: [d for _, d in found] for file, found in self._tests.items()},
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


def _owner(test_id: str, file: str) -> str:
    """Where a failed test lives: the file (pytest, jest, vitest: `file::name`) or package
    folder (go: `dir::TestName`) its id names, else the file it failed in."""
    where, separator, _ = test_id.partition("::")
    return where.strip().removeprefix("./") if separator else file


def _covers(target: str, owner: str) -> bool:
    """Whether running `target` (a file, a folder, `file::name`, a Go file) ran `owner`'s
    tests (for `file::name`, the file counts: a diagnostic names its test, not the case)."""
    target = target.partition("::")[0].strip().removeprefix("./").rstrip("/")
    if target in ("", "."):
        return True
    if owner == target or owner.startswith(f"{target}/"):
        return True
    return target.endswith(".go") and posixpath.dirname(target) == owner
