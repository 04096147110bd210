"""The user in the loop, over LSP: `agentLsp.continue` (a stopped task goes on with a hint; a
team task FAILED or cut short goes on from its checkpoint, the hint to its planner),
`agentLsp.steer` and `AGENT:` comment lines (a note for the running task), and the code action
that offers to continue where a task stopped.

A comment line `# AGENT: …` (or `// AGENT: …`, `-- AGENT: …`, `; AGENT: …`) typed in any
buffer while a task runs is taken once the buffer has been still for `SETTLE` seconds: its text
goes to the task as a note for its next model request, and the line is removed through
`workspace/applyEdit` (only that line). Only what the user typed counts (`lsp.typed`): a line a
didChange put in, not one the server's own edits put in (the agent's), not one the file already
held when it was opened or holds on disk. With no task running such a line is left alone. A
note never answers a question (ask_user, a permission, a conflict): those are answered through
their own prompt. It needs only didChange and applyEdit: every editor."""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as t

from agent_lsp.errors import AgentLspError
from agent_lsp.lsp.documents import line_key
from agent_lsp.lsp.textedit import minimal_edits
from agent_lsp.lsp.typed import NotTyped
from agent_lsp.task import Task, TaskKind

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from agent_lsp.lsp.tasks import TaskManager
    from agent_lsp.session import Session

log = logging.getLogger(__name__)
CONTINUE = "agentLsp.continue"
STEER = "agentLsp.steer"
CONTINUE_TITLE = "Agent: continue the stopped task…"
SETTLE = 1.0  # seconds a buffer stays unchanged before its AGENT: lines are taken
MARKER = re.compile(
    r"^[ \t]*(?:#+|//+|--+|;+|%+|/\*+|<!--|\*)[ \t]*AGENT:[ \t]*(?P<note>.*?)[ \t]*"
    r"(?:\*/|-->)?[ \t]*\r?\n?$"
)


def steer_lines(lines: list[str]) -> list[tuple[int, str]]:
    """The AGENT: comment lines of a buffer with a note: (line number, note)."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(lines):
        if "AGENT:" in line and (match := MARKER.match(line)) and match["note"].strip():
            found.append((number, match["note"].strip()))
    return found


class SteerHost(Protocol):
    """What steering needs of the server's state (`lsp.state.AgentState`)."""

    @property
    def server(self) -> LanguageServer: ...
    @property
    def tasks(self) -> TaskManager: ...
    def session_for(self, uri: str | None) -> Session: ...
    def start_task(
        self,
        task: Task,
        session: Session,
        *,
        hint: str | None = None,
        continues: str | None = None,
        task_id: str | None = None,
        team: bool = False,
    ) -> dict[str, str]: ...


class UserControl:
    def __init__(self, state: SteerHost) -> None:
        self.state = state
        self.server: LanguageServer = state.server
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._jobs: set[asyncio.Task[None]] = set()
        self.not_typed = NotTyped(self.server)  # AGENT: lines opened with, or the server's
        self._typed: dict[str, Counter[str]] = {}  # the AGENT: lines typed, not yet taken

    # -- continue ----------------------------------------------------------------------------

    async def continue_task(
        self, task_id: str | None, hint: str, uri: str | None
    ) -> dict[str, Any]:
        tasks = self.state.tasks
        session = self.state.session_for(uri)
        known = tasks.outcomes.get(task_id) if task_id else None
        checkpoint_id = known.task_id if known is not None and known.task_id else task_id
        try:
            team = await asyncio.to_thread(session.team_to_continue, checkpoint_id)
            cp = None if team else await asyncio.to_thread(session.stopped_task, checkpoint_id)
            if tasks.running is not None:
                raise AgentLspError(
                    f"an agent task is already running ({tasks.running[0]}): steer it "
                    "(agentLsp.steer) or cancel it first"
                )
        except AgentLspError as exc:
            return self._tell(t.MessageType.Warning, str(exc), error=True)
        if team is not None:  # the team goes on from its checkpoint, the hint to its planner
            given = tasks.id_of(team.task_id) or team.task_id
            task = Task(kind=TaskKind.TASK, instruction=team.instruction)
            return self.state.start_task(
                task, session, hint=hint, continues=team.task_id, task_id=given, team=True
            )
        assert cp is not None
        given = tasks.id_of(cp.task_id) or cp.task_id
        return self.state.start_task(
            cp.task, session, hint=hint, continues=cp.task_id, task_id=given
        )

    def actions(self, uri: str) -> list[t.CodeAction]:
        """ "Continue…" in the file of the task that stopped short (any file for a task
        without one), while no other task runs."""
        tasks = self.state.tasks
        stopped = tasks.stopped
        if stopped is None or tasks.running is not None or stopped[1] not in (None, uri):
            return []
        command = t.Command(
            title=CONTINUE_TITLE, command=CONTINUE, arguments=[{"taskId": stopped[0]}]
        )
        return [t.CodeAction(title=CONTINUE_TITLE, kind=t.CodeActionKind.QuickFix, command=command)]

    # -- steer -------------------------------------------------------------------------------

    def steer(self, note: str) -> dict[str, Any]:
        if not note.strip():
            return self._tell(t.MessageType.Warning, 'agentLsp.steer needs {"note": "..."}', True)
        if not self.state.tasks.steer(note):
            return self._tell(
                t.MessageType.Warning,
                "no agent task is running: nothing to steer (continue a stopped task with "
                "agentLsp.continue)",
                error=True,
            )
        return {"status": "accepted"}

    def changed(self, uri: str, added: list[str]) -> None:
        """didChange (`added`: the AGENT: lines it put in): while a task runs, the lines the
        user typed are taken once the buffer is still."""
        if self.state.tasks.running is None:
            self._typed.pop(uri, None)
            return
        typed = self.not_typed.typed(uri, added)
        if typed:
            self._typed.setdefault(uri, Counter()).update(typed)
        if uri not in self._typed:
            return
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self._timers[uri] = loop.call_later(SETTLE, self._settled, uri)

    def _settled(self, uri: str) -> None:
        self._timers.pop(uri, None)
        job = asyncio.get_running_loop().create_task(self._take(uri))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

    def opened(self, uri: str, text: str) -> None:
        self.not_typed.opened(uri, text)

    def closed(self, uri: str) -> None:
        self.not_typed.closed(uri)
        self._typed.pop(uri, None)

    async def _take(self, uri: str) -> None:
        typed = self._typed.pop(uri, Counter[str]())
        doc = self.server.workspace.text_documents.get(uri)
        if doc is None or self.state.tasks.running is None or not typed:
            return
        lines = list(doc.lines)
        found: list[tuple[int, str]] = []
        for number, note in steer_lines(lines):
            key = line_key(lines[number])
            if typed[key] > 0:  # typed by the user: not the agent's, not in the file before
                typed[key] -= 1
                found.append((number, note))
        taken = [(n, note) for n, note in found if self.state.tasks.steer(note)]
        if not taken:
            return
        gone = {n for n, _ in taken}
        old = doc.source
        new = "".join(line for n, line in enumerate(lines) if n not in gone)
        edits = minimal_edits(old, new, doc.position_codec.client_num_units)
        try:
            result = await self.server.workspace_apply_edit_async(
                t.ApplyWorkspaceEditParams(
                    edit=self._edit(uri, doc.version, edits), label="agent-lsp: steer note taken"
                )
            )
            applied, reason = result.applied, result.failure_reason
        except Exception as exc:  # the note is taken all the same
            applied, reason = False, str(exc)
        if not applied:
            log.warning("the steer line could not be removed from %s: %s", uri, reason)
            self._tell(
                t.MessageType.Warning,
                "the agent took the note but could not remove its AGENT: line "
                f"({reason or 'the editor refused'}): delete it yourself",
            )

    def _edit(self, uri: str, version: int | None, edits: list[t.TextEdit]) -> t.WorkspaceEdit:
        caps = self.server.client_capabilities.workspace
        edit_caps = caps.workspace_edit if caps else None
        if not (edit_caps and edit_caps.document_changes):
            return t.WorkspaceEdit(changes={uri: edits})
        document = t.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return t.WorkspaceEdit(
            document_changes=[t.TextDocumentEdit(text_document=document, edits=list(edits))]
        )

    def _tell(self, kind: t.MessageType, message: str, error: bool = False) -> dict[str, Any]:
        self.server.window_show_message(
            t.ShowMessageParams(type=kind, message=f"agent-lsp: {message}")
        )
        return {"error": message} if error else {"message": message}
