"""Diagnostics-triggered suggestions (opt-in, `suggestions.enabled`): when new diagnostics
appear, after a debounce and within an hourly budget, the agent prepares a fix in the background
without touching the editor; the fix is then offered as a code action carrying the edit itself,
so editors can preview it. Never more than one agent task at a time."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as t

from agent_lsp.lsp.convert import resolved_path
from agent_lsp.lsp.proposals import REJECT, Proposal, ProposalStore

if TYPE_CHECKING:
    from agent_lsp.lsp.tasks import TaskManager
    from agent_lsp.session import Session

DEBOUNCE = 2.0
PER_HOUR = 10


class SuggestionHost(Protocol):
    """What suggestions need of the server's state (`lsp.state.AgentState`)."""

    @property
    def session(self) -> Session: ...
    @property
    def tasks(self) -> TaskManager: ...
    def start_suggestion(
        self, uri: str, diagnostic: t.Diagnostic, suggestions: Suggestions, key: Any
    ) -> None: ...


class Suggestions:
    def __init__(self, state: SuggestionHost, store: ProposalStore) -> None:
        self.state = state
        self.store = store
        self.seen: set[tuple[str, int, str]] = set()
        self.waiting: list[tuple[str, t.Diagnostic]] = []
        self.started: deque[float] = deque()
        self.for_diagnostic: dict[tuple[str, int, str], Proposal] = {}
        self._timer: asyncio.TimerHandle | None = None

    @property
    def enabled(self) -> bool:
        return self.state.session.settings.suggestions.enabled

    def on_diagnostics(self, uri: str, diagnostics: Sequence[t.Diagnostic]) -> None:
        if not self.enabled:
            return
        for diagnostic in diagnostics:
            key = _key(uri, diagnostic)
            if key not in self.seen and diagnostic.source != "agent-lsp":
                self.seen.add(key)
                self.waiting.append((uri, diagnostic))
        if self.waiting:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = asyncio.get_running_loop().call_later(DEBOUNCE, self._fire)

    def _fire(self) -> None:
        self._timer = None
        now = time.monotonic()
        while self.started and now - self.started[0] > 3600:
            self.started.popleft()
        if not self.waiting or len(self.started) >= PER_HOUR:
            return
        if self.state.tasks.running is not None:  # busy: try again after the next debounce
            self._timer = asyncio.get_running_loop().call_later(DEBOUNCE, self._fire)
            return
        self.waiting.sort(key=lambda item: int(item[1].severity or 9))  # errors first
        uri, diagnostic = self.waiting.pop(0)
        self.started.append(now)
        self.state.start_suggestion(uri, diagnostic, self, _key(uri, diagnostic))

    def record(self, key: tuple[str, int, str], path: Path) -> None:
        proposal = self.store.by_path.get(path)
        if proposal is not None:
            self.for_diagnostic[key] = proposal

    def actions(self, uri: str, diagnostics: Sequence[t.Diagnostic]) -> list[t.CodeAction]:
        actions: list[t.CodeAction] = []
        for diagnostic in diagnostics:
            proposal = self.for_diagnostic.get(_key(uri, diagnostic))
            if proposal is None or self.store.stale(proposal):
                continue
            edit = self.store.edit_for(proposal)
            if edit is None:
                continue
            actions.append(
                t.CodeAction(
                    title=f"Apply agent suggestion: {diagnostic.message.splitlines()[0][:80]}",
                    kind=t.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=True,
                    edit=edit,
                    command=t.Command(
                        title="forget the suggestion",
                        command=REJECT,
                        arguments=[{"proposalId": proposal.id}],
                    ),
                )
            )
        return actions


def _key(uri: str, diagnostic: t.Diagnostic) -> tuple[str, int, str]:
    path = resolved_path(uri)
    return (str(path) if path else uri, diagnostic.range.start.line, diagnostic.message)
