"""Runs agent tasks in the background with work-done progress and a final message."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from lsprotocol import types as t

from agent_lsp.config.schema import ApplyMode
from agent_lsp.errors import TaskBusyError
from agent_lsp.loop.summary import task_totals
from agent_lsp.lsp.agent_thread import AgentThread, CrossLoopChannel, settle_heap
from agent_lsp.lsp.channel import LspEditorChannel
from agent_lsp.lsp.heap import release_heap
from agent_lsp.memory.checkpoints import CONTINUABLE
from agent_lsp.messages import AgentEvent, EventKind, TaskOutcome, TaskStatus
from agent_lsp.seams import Tool
from agent_lsp.session import Session
from agent_lsp.task import Task

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from agent_lsp.lsp.proposals import ProposalStore
    from agent_lsp.lsp.questions import Questions

log = logging.getLogger(__name__)
CANCEL_GRACE = 5.0  # seconds
TEAM_CANCELLED = (
    "cancelled — the team task stays resumable: resume it with `agent-lsp run --resume`, or "
    "accept the resume offer when the server starts again"
)

_MESSAGE_TYPE = {
    TaskStatus.COMPLETED: t.MessageType.Info,
    TaskStatus.FAILED: t.MessageType.Warning,
    TaskStatus.PAUSED: t.MessageType.Warning,
    TaskStatus.CANCELLED: t.MessageType.Info,
    TaskStatus.ERROR: t.MessageType.Error,
}


async def _run_task(
    session: Session,
    task: Task,
    channel: CrossLoopChannel,
    resume: bool,
    hint: str | None = None,
    continues: str | None = None,
    team: bool = False,
    tools: Sequence[Tool] = (),
) -> TaskOutcome:
    """On the agent loop: the first time, load the model client (the `openai` import) and build
    the symbol index (one object per definition: ~72,000 for the CPython stdlib) off the loop,
    and settle the heap they grew, which lives as long as the server; then run the task."""
    if not session.model_loaded:
        with contextlib.suppress(Exception):  # run_task meets the same errors and reports them
            await asyncio.to_thread(lambda: session.model)
            await asyncio.to_thread(session.symbols.refresh)
        settle_heap()
    if team:  # team mode: a planner, parallel workers and a reviewer (agent_lsp.team)
        from agent_lsp.team import Orchestrator

        crew = Orchestrator(session, channel)
        if hint is not None and continues:  # a FAILED or cut-short team task, with a hint
            done = await crew.proceed(continues, hint)
        else:
            done = await (crew.resume() if resume else crew.run(task.instruction, task))
        return done.as_task_outcome()
    return await session.run_task(
        task, channel, resume=resume, hint=hint, task_id=continues, tools=tools
    )


class TaskManager:
    """One agent task at a time per server; commands return at once with its id. The task
    itself runs on the agent thread's loop (`agent_thread`), never on the server's."""

    def __init__(
        self,
        server: LanguageServer,
        proposals: ProposalStore | None = None,
        questions: Questions | None = None,
    ) -> None:
        self.server = server
        self.proposals = proposals
        self.questions = questions
        self.user_cancelled = False
        self.tokens: dict[str, str | None] = {}
        self.running: tuple[str, asyncio.Task[None]] | None = None
        # A task reported cancelled after the grace period may still be stopping on the agent
        # loop: the next task waits for it, so two tasks never share the loop (and the model).
        self._stopping: asyncio.Task[None] | None = None
        self.outcomes: dict[str, TaskOutcome] = {}
        self.teams: set[str] = set()  # the ids of team tasks
        self.worker = AgentThread()
        self.session: Session | None = None  # the running task's
        # The latest task that stopped short: (its id, the uri of its file) — offered to
        # continue with a hint (a code action there).
        self.stopped: tuple[str, str | None] | None = None

    @property
    def running_id(self) -> str | None:
        return self.running[0] if self.running else None

    def start(
        self,
        task: Task,
        session: Session,
        *,
        proposals: ProposalStore | None = None,
        quiet: bool = False,
        on_done: Callable[[], None] | None = None,
        resume: bool = False,
        hint: str | None = None,
        continues: str | None = None,
        task_id: str | None = None,
        team: bool = False,
        tools: Sequence[Tool] = (),
    ) -> str:
        """Start `task` in the background. `proposals` turns its edits into proposals (review
        mode, suggestions); `quiet` logs the outcome instead of showing it; `hint` continues
        the stopped task `continues` (a checkpoint id) under `task_id`; `team`: team mode;
        `tools`: this task's own besides the session's (improve: propose_improvement)."""
        if self.running is not None:
            raise TaskBusyError(
                f"an agent task is already running ({self.running[0]}); cancel it first"
            )
        if proposals is None and session.settings.apply_mode is ApplyMode.REVIEW:
            proposals = self.proposals
        task_id = task_id or uuid.uuid4().hex[:8]
        self.outcomes.pop(task_id, None)  # a continued task is reported again when it ends
        stopping = self._stopping if self._stopping and not self._stopping.done() else None
        run = self._run(
            task_id, task, session, proposals, quiet, resume, stopping, hint, continues, team, tools
        )
        job = asyncio.get_running_loop().create_task(run)
        if on_done is not None:
            job.add_done_callback(lambda _: on_done())
        self.running = (task_id, job)
        if team:
            self.teams.add(task_id)
        self.session = session
        self.stopped = None
        return task_id

    def steer(self, note: str) -> bool:
        """A note for the running task (taken at its next step); False when none runs."""
        session = self.session if self.running is not None else None
        return session is not None and session.steer(note)

    def id_of(self, checkpoint_id: str) -> str | None:
        """The id this server gave the task whose checkpoint is `checkpoint_id`."""
        return next((k for k, o in self.outcomes.items() if o.task_id == checkpoint_id), None)

    def cancel(self, task_id: str | None = None, by_user: bool = True) -> bool:
        if self.running is None or (task_id and task_id != self.running[0]):
            return False
        self.user_cancelled = by_user
        task_id, job = self.running
        job.cancel()
        # A step that does not yield to the cancel (a request stuck in a client library's
        # cleanup) must not keep the user waiting: report it cancelled after a grace period.
        asyncio.get_running_loop().call_later(CANCEL_GRACE, self._abandon, task_id)
        return True

    def _cancelled(self, task_id: str) -> str:
        """A cancelled team task keeps its checkpoint: it is resumed where it stopped."""
        return TEAM_CANCELLED if task_id in self.teams else "cancelled"

    def _abandon(self, task_id: str) -> None:
        if task_id in self.outcomes or self.running is None or self.running[0] != task_id:
            return
        log.warning(
            "task %s did not stop within %s s of its cancel; reported cancelled",
            task_id,
            CANCEL_GRACE,
        )
        self._stopping = self.running[1]
        self.running = None
        outcome = TaskOutcome(status=TaskStatus.CANCELLED, summary=self._cancelled(task_id))
        self.outcomes[task_id] = outcome
        self._finish(self.tokens.get(task_id), task_id, outcome)

    async def _run(
        self,
        task_id: str,
        task: Task,
        session: Session,
        proposals: ProposalStore | None,
        quiet: bool,
        resume: bool = False,
        stopping: asyncio.Task[None] | None = None,
        hint: str | None = None,
        continues: str | None = None,
        team: bool = False,
        tools: Sequence[Tool] = (),
    ) -> None:
        token = None if quiet else await self._begin_progress(task, task_id)
        self.tokens[task_id] = token
        channel = LspEditorChannel(
            self.server,
            session.settings.edit_timeout,
            lambda e: self._on_event(token, e),
            proposals,
            self.questions,
            (session.root / task.path).as_uri() if task.path else None,
            session.settings.ask_timeout,
        )
        remote = CrossLoopChannel(channel, asyncio.get_running_loop())
        try:
            if stopping is not None:
                log.info("task %s waits for the cancelled task to stop", task_id)
                await asyncio.wait([stopping])
            job = _run_task(session, task, remote, resume, hint, continues, team, tools)
            outcome = await self.worker.run(job)
        except asyncio.CancelledError:
            outcome = TaskOutcome(status=TaskStatus.CANCELLED, summary=self._cancelled(task_id))
            if self.user_cancelled and task_id not in self.teams:  # not offered again later
                try:
                    session.discard_resume()
                except Exception:  # the outcome is still reported
                    log.exception("could not discard the cancelled task's checkpoint")
        except Exception as exc:  # reported to the user; the server stays up
            log.exception("agent task %s crashed", task_id)
            outcome = TaskOutcome(status=TaskStatus.ERROR, summary=f"internal error: {exc!r}")
        finally:
            if self.running is not None and self.running[0] == task_id:
                self.running = None
        with contextlib.suppress(Exception):  # what the finished task held goes back
            await asyncio.to_thread(session.symbols.release)  # the idle parse worker process
            await asyncio.to_thread(release_heap)
        if outcome.status is TaskStatus.CANCELLED:
            # Sent apart from the cancel command's answer: Emacs' jsonrpc can leave a message
            # that arrives in the same read as a sync request's answer unhandled until more
            # output comes (seen with eglot 1.9 in batch).
            await asyncio.sleep(0.1)
        if task_id in self.outcomes:  # already reported (abandoned after a cancel)
            return
        self.outcomes[task_id] = outcome
        if self._continuable(task_id, outcome) and not quiet:
            self.stopped = (task_id, (session.root / task.path).as_uri() if task.path else None)
        if quiet:
            log.info("background task %s: %s", task_id, outcome.summary)
            return
        self._finish(token, task_id, outcome)

    def _continuable(self, task_id: str, outcome: TaskOutcome) -> bool:
        """A task `agentLsp.continue` can go on with: stopped short, or a FAILED team task."""
        failed_team = task_id in self.teams and outcome.status is TaskStatus.FAILED
        return outcome.stop_reason in CONTINUABLE or failed_team

    async def _begin_progress(self, task: Task, task_id: str) -> str | None:
        window = self.server.client_capabilities.window
        if not (window and window.work_done_progress):
            return None
        token = f"agent-lsp/{task_id}/{uuid.uuid4().hex[:6]}"
        progress = self.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(token), 5)
        except Exception as exc:  # a client that fails this still gets messages
            log.warning("work-done progress unavailable: %s", exc)
            return None
        progress.begin(
            token,
            t.WorkDoneProgressBegin(title="agent-lsp", message=task.title(), cancellable=True),
        )
        job = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def on_done(future: Future[object]) -> None:  # the user pressed cancel in the editor
            if future.cancelled() and job is not None:
                loop.call_soon_threadsafe(job.cancel)

        progress.tokens[token].add_done_callback(on_done)
        return token

    def _on_event(self, token: str | None, event: AgentEvent) -> None:
        self.server.window_log_message(
            t.LogMessageParams(type=t.MessageType.Log, message=f"agent-lsp: {event.message}")
        )
        if token is not None and event.kind not in (EventKind.STARTED, EventKind.FINISHED):
            self.server.work_done_progress.report(
                token, t.WorkDoneProgressReport(message=event.message[:200])
            )

    def _finish(self, token: str | None, task_id: str, outcome: TaskOutcome) -> None:
        text = f"agent-lsp: {outcome.status.value}: {outcome.summary}"
        pending = self.proposals.by_path if self.proposals else {}
        if outcome.changed_files and pending:
            text += f" (proposed: {', '.join(outcome.changed_files)}; review on the marked lines)"
        elif outcome.changed_files:
            text += f" (changed: {', '.join(outcome.changed_files)})"
        if self._continuable(task_id, outcome):
            text += (
                f" — continue task {task_id} with a hint: the command agentLsp.continue, or the "
                "code action “Agent: continue the stopped task…”"
            )
        if outcome.rechecked and outcome.rechecked not in outcome.summary:
            text += f" — {outcome.rechecked}"  # what was asked about the fix's diagnostic
        # The totals go in the message too: VS Code shows no progress end, only the message.
        text += f" — {task_totals(outcome)}"
        if token is not None:
            self.server.work_done_progress.end(
                token,
                t.WorkDoneProgressEnd(message=f"{outcome.status.value}: {task_totals(outcome)}"),
            )
        self.server.window_show_message(
            t.ShowMessageParams(type=_MESSAGE_TYPE[outcome.status], message=text)
        )
        log.info("task %s: %s", task_id, text)
