"""`agentLsp.runTests` and run-on-save: the project's tests in the background; failures become
diagnostics (`source: "agent-lsp"`) at the failing line, each offering "Ask agent to fix"."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as t

from adapters import is_test_file, owning_package, tests_for_source
from agent_lsp.errors import WorkspaceError
from agent_lsp.fileio import read_disk_text
from agent_lsp.lsp.agent_thread import AgentThread, CrossLoopChannel
from agent_lsp.lsp.channel import LspEditorChannel
from agent_lsp.lsp.publisher import SOURCE, AgentDiagnostics
from agent_lsp.lsp.textedit import lsp_lines
from agent_lsp.project.workspace import Workspace
from agent_lsp.session import Session

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)


class TestRuns:
    """At most one test run at a time; a request while one runs is answered with its state."""

    __test__ = False  # not a pytest class

    def __init__(self, server: LanguageServer, worker: AgentThread) -> None:
        self.server = server
        self.worker = worker  # runs use the session's test runner, as agent tasks do
        self.running: asyncio.Task[None] | None = None

    def start(self, session: Session, target: Path | None) -> dict[str, str]:
        if self.running is not None and not self.running.done():
            return {"status": "already running"}
        if session.verifier is None:
            message = f"agent-lsp: no test runner found ({session.root})"
            self.server.window_show_message(
                t.ShowMessageParams(type=t.MessageType.Warning, message=message)
            )
            return {"error": message}
        self.running = asyncio.get_running_loop().create_task(self._run(session, target))
        return {"status": "started"}

    async def _run(self, session: Session, target: Path | None) -> None:
        verifier = session.verifier
        if verifier is None:
            return
        channel = LspEditorChannel(self.server, session.settings.edit_timeout, lambda _: None)
        remote = CrossLoopChannel(channel, asyncio.get_running_loop())
        workspace = Workspace(session.root, remote, session.gate(remote, editor=True))
        targets, scope = await asyncio.to_thread(_targets, session.root, workspace, target)
        try:
            report = await self.worker.run(verifier.run(workspace, targets))
        except WorkspaceError as exc:  # not permitted (no sandbox, no yes), a bad target
            self._show(t.MessageType.Warning, f"agent-lsp: {exc}")
            return
        except Exception as exc:  # reported, never fatal
            log.exception("test run failed")
            self._show(t.MessageType.Error, f"agent-lsp: tests could not run: {exc!r}")
            return
        if targets:  # a full run publishes in the verifier (the agent's runs too)
            session.diagnostics.set_test_results(session.root, report, ran=targets)
        kind = t.MessageType.Info if report.ok else t.MessageType.Warning
        self._show(kind, f"agent-lsp: tests: {report.summary()}{scope}")

    def _show(self, kind: t.MessageType, message: str) -> None:
        self.server.window_show_message(t.ShowMessageParams(type=kind, message=message))


def publish_test_diagnostics(
    server: LanguageServer, publisher: AgentDiagnostics, session: Session, paths: set[Path]
) -> None:
    """Send agent-lsp's test diagnostics for `paths` (an empty list clears a file)."""
    for path in paths:
        uri = path.as_uri()
        lines = lsp_lines(_text_of(server, uri, path))
        diagnostics: list[t.Diagnostic] = []
        for info in session.diagnostics.tests_for(path):
            line = min(info.line, max(len(lines) - 1, 0))
            width = len(lines[line].rstrip("\r\n").encode("utf-16-le")) // 2 if lines else 0
            diagnostics.append(
                t.Diagnostic(
                    range=t.Range(
                        start=t.Position(line=line, character=0),
                        end=t.Position(line=line, character=width),
                    ),
                    message=info.message,
                    severity=t.DiagnosticSeverity.Error,
                    source=SOURCE,
                )
            )
        publisher.set("tests", uri, diagnostics)


def _text_of(server: LanguageServer, uri: str, path: Path) -> str:
    doc = server.workspace.text_documents.get(uri)
    if doc is not None:
        return doc.source
    try:
        return read_disk_text(path)
    except OSError:
        return ""


def _targets(root: Path, workspace: Workspace, target: Path | None) -> tuple[list[str], str]:
    """What a run for `target` runs, and how the result message names it: a test file or a
    folder itself; for a source file, the tests that import it (Python, JS/TS) or its
    package's tests (Go), found in the monorepo package that owns it; that package's tests
    when none is found (all tests in a project without packages); all tests without `target`."""
    if target is None or not target.resolve().is_relative_to(root.resolve()):
        return [], ""
    relative = workspace.relative(target)
    if target.is_dir() or is_test_file(relative):
        return [relative], f" ({relative})"
    found = tests_for_source(root, relative)
    if not found:
        package = owning_package(root, relative)
        if package:
            return [package], f" (all tests of {package}/: none found for {relative})"
        return [], f" (all tests: none found for {relative})"
    shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return found, f" ({shown}, for {relative})"
