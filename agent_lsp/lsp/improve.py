"""`agentLsp.improve` ({request, uri?, yes?}): a task of kind improve, then the proposed patch
offered as review mode offers a proposal — Apply / Show diff / Reject with
`window/showMessageRequest` (or a question diagnostic at `uri` where the client has none; no
answer is a reject), Show diff opening the diff as a document where the client can
(`window/showDocument`, `.agent-lsp/improvements/pending.diff`, removed once the user decided),
else in the log — unless `yes`
(the terminal's `--yes`) applies it at once; applied (self-checked, logged) and the session's
settings reloaded for the next task.
`agentLsp.improveList` and `agentLsp.improveRevert` ({id}) are `agent-lsp improve --list` and
`--revert ID`."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as t

from agent_lsp.config.settings import load_settings
from agent_lsp.errors import AgentLspError
from agent_lsp.improve import (
    ImprovementError,
    ProposeImprovementTool,
    apply_improvement,
    improve_task,
    list_improvements,
    plan,
    revert_improvement,
    unified_diff,
)
from agent_lsp.lsp.agent_thread import CrossLoopChannel
from agent_lsp.lsp.channel import LspEditorChannel
from agent_lsp.memory.layout import Layout
from agent_lsp.session import Session

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from pygls.lsp.server import LanguageServer

    from agent_lsp.lsp.questions import Questions
    from agent_lsp.lsp.tasks import TaskManager


class Host(Protocol):
    """What the commands need of the agent state (`agent_lsp.lsp.state.AgentState`)."""

    server: LanguageServer
    tasks: TaskManager
    questions: Questions
    options: dict[str, Any] | None
    updates: dict[str, Any] | None

    def session_for(self, uri: str | None) -> Session: ...
    def background(self, job: Coroutine[Any, Any, None]) -> None: ...


APPLY, SHOW, REJECT = "Apply", "Show diff", "Reject"
PENDING = "pending.diff"  # the diff Show diff opens, there until the user decides


class Improvements:
    def __init__(self, state: Host) -> None:
        self.state = state

    def start(self, request: str, uri: str | None, *, yes: bool = False) -> dict[str, str]:
        if not request.strip():
            return {"error": 'agentLsp.improve needs {"request": "..."}'}
        state = self.state
        session = state.session_for(uri)
        tool = ProposeImprovementTool(session.settings)
        holder: dict[str, str] = {}

        def done() -> None:
            outcome = state.tasks.outcomes.get(holder.get("id", ""))
            why = outcome and outcome.summary
            state.background(self._review(session, request, tool, why, uri, yes))

        try:
            task_id = state.tasks.start(improve_task(request), session, tools=[tool], on_done=done)
        except AgentLspError as exc:
            return self._tell(t.MessageType.Warning, str(exc))
        holder["id"] = task_id
        return {"taskId": task_id}

    async def _review(
        self,
        session: Session,
        request: str,
        tool: ProposeImprovementTool,
        why: str | None,
        uri: str | None,
        yes: bool = False,
    ) -> None:
        patch = tool.proposed
        if patch is None:
            self._tell(t.MessageType.Warning, f"no improvement proposed: {why or 'no answer'}")
            return
        loaded = await asyncio.to_thread(self._load, session)
        try:
            changes = plan(session.root, patch, loaded.settings)
        except ImprovementError as exc:
            self._tell(t.MessageType.Warning, f"improvement {exc}")
            return
        diff = unified_diff(changes)
        settings = session.settings
        channel = LspEditorChannel(
            self.state.server,
            settings.edit_timeout,
            lambda _: None,
            questions=self.state.questions,
            focus_uri=uri,  # without showMessageRequest: a question diagnostic there
            ask_timeout=settings.ask_timeout,
        )
        question = f"agent-lsp proposes: {patch.summary} ({', '.join(c.path for c in changes)})"
        answer = APPLY if yes else await channel.ask(question, [APPLY, SHOW, REJECT])
        while answer == SHOW:
            await self._show(session, diff)
            answer = await channel.ask(question, [APPLY, REJECT])
        await asyncio.to_thread(_discard, session.root)  # decided: the record keeps the patch
        if answer != APPLY:
            self._tell(t.MessageType.Info, "improvement rejected: nothing changed")
            return
        remote = CrossLoopChannel(channel, asyncio.get_running_loop())  # asked from the worker
        job = apply_improvement(
            session.root, patch, request, loaded.settings, trusted=loaded.trusted, channel=remote
        )
        try:
            record = await self.state.tasks.worker.run(job)  # the dry run: on the agent loop
        except ImprovementError as exc:
            self._tell(t.MessageType.Warning, f"improvement {exc}")
            return
        session.update_settings((await asyncio.to_thread(self._load, session)).settings)
        self._tell(
            t.MessageType.Info,
            f"improvement {record.id} applied: {patch.summary} (checked: "
            f"{'; '.join(record.checked)})",
        )

    async def _show(self, session: Session, diff: str) -> None:
        """The diff as a document (review mode's Show diff), else in the log and a message."""
        window = self.state.server.client_capabilities.window
        if window and window.show_document and window.show_document.support:
            path = Layout(session.root).improvements / PENDING
            try:
                await asyncio.to_thread(_write, path, diff)
                shown = await self.state.server.window_show_document_async(
                    t.ShowDocumentParams(uri=path.as_uri(), take_focus=True)
                )
            except Exception:  # not written, or the editor answered an error
                shown = None
            if shown is not None and shown.success:
                return
        self.state.server.window_log_message(
            t.LogMessageParams(type=t.MessageType.Info, message=diff)
        )
        self._tell(t.MessageType.Info, diff[:2000])

    def _load(self, session: Session) -> Any:
        return load_settings(session.root, self.state.options, editor_updates=self.state.updates)

    def listing(self, uri: str | None) -> dict[str, Any]:
        warnings: list[str] = []  # log files that are not this user's: ignored, said
        records = list_improvements(self.state.session_for(uri).root, warnings)
        for warning in warnings:
            self._tell(t.MessageType.Warning, warning)
        return {"improvements": [r.model_dump(mode="json") for r in records]}

    def revert(self, ident: str, uri: str | None) -> dict[str, Any]:
        session = self.state.session_for(uri)
        try:
            record = revert_improvement(session.root, ident)
        except ImprovementError as exc:
            return self._tell(t.MessageType.Warning, str(exc))
        session.update_settings(self._load(session).settings)
        return self._tell(t.MessageType.Info, f"improvement {record.id} reverted")

    def _tell(self, kind: t.MessageType, message: str) -> dict[str, Any]:
        self.state.server.window_show_message(
            t.ShowMessageParams(type=kind, message=f"agent-lsp: {message}")
        )
        return {"message": message} if kind != t.MessageType.Warning else {"error": message}


def _discard(root: Path) -> None:
    """The shown diff removed once the user decided (the record keeps the patch); never
    through a folder linking out of the workspace."""
    layout = Layout(root)
    path = layout.improvements / PENDING
    if path.is_file() and layout.reads.describe(path.parent).in_root:
        with contextlib.suppress(OSError):
            path.unlink()


def _write(path: Path, text: str) -> None:
    layout = Layout(path.parent.parent.parent)
    layout.reads.mkdir(path.parent)
    layout.reads.write(path, text)
