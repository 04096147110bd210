"""Opt-in linters (`lint.enabled`): ruff or pyflakes, go vet, tsc run on open and save against the
editor's text; what they find is published as agent-lsp diagnostics (each offering a fix)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types as t

from adapters.linters import LintIssue
from agent_lsp.loop.verify import NotPermittedError
from agent_lsp.lsp.agent_thread import AgentThread, CrossLoopChannel
from agent_lsp.lsp.channel import LspEditorChannel
from agent_lsp.lsp.publisher import SOURCE, AgentDiagnostics
from agent_lsp.session import Session

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)


class LintRuns:
    """One lint run at a time per server; a request during a run queues one more run."""

    def __init__(
        self, server: LanguageServer, publisher: AgentDiagnostics, worker: AgentThread
    ) -> None:
        self.server = server
        self.worker = worker  # linting shares the session's shadow copy with the agent's tests
        self.publisher = publisher
        self.running: asyncio.Task[None] | None = None
        self.again = False
        self.published: set[str] = set()

    def start(self, session: Session) -> None:
        if not session.settings.lint.enabled:
            return
        if self.running is not None and not self.running.done():
            self.again = True
            return
        self.running = asyncio.get_running_loop().create_task(self._run(session))

    async def _run(self, session: Session) -> None:
        while True:
            self.again = False
            channel = LspEditorChannel(self.server, session.settings.edit_timeout, lambda _: None)
            remote = CrossLoopChannel(channel, asyncio.get_running_loop())
            try:
                issues = await self.worker.run(session.lint(remote))
            except NotPermittedError as exc:  # no OS sandbox, and the user said no
                log.info("%s", exc)
                return
            except Exception:  # a linter failing is logged, never fatal
                log.exception("lint run failed")
                return
            self._publish(session, issues)
            if not self.again:
                return

    def _publish(self, session: Session, issues: list[LintIssue]) -> None:
        by_uri: dict[str, list[t.Diagnostic]] = {}
        for issue in issues:
            uri = (session.root / issue.file).resolve().as_uri()
            line, column = max(issue.line - 1, 0), max(issue.column - 1, 0)
            by_uri.setdefault(uri, []).append(
                t.Diagnostic(
                    range=t.Range(
                        start=t.Position(line=line, character=column),
                        end=t.Position(line=line, character=column + 1),
                    ),
                    message=f"{issue.source}: {issue.message}",
                    severity=t.DiagnosticSeverity.Error
                    if issue.severity == "error"
                    else t.DiagnosticSeverity.Warning,
                    source=SOURCE,
                    code=issue.code,
                )
            )
        for uri in self.published - set(by_uri):
            self.publisher.set("lint", uri, [])
        for uri, diagnostics in by_uri.items():
            self.publisher.set("lint", uri, diagnostics)
        self.published = set(by_uri)
