"""`ProjectMemory`: the memory of one project for one session — starts and finishes tasks'
memory, resumes, undoes, remembers, lists, shows and forgets experiences."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from agent_lsp import __version__
from agent_lsp.config.schema import MemorySettings
from agent_lsp.errors import AgentLspError
from agent_lsp.memory.checkpoints import Checkpoint, CheckpointStore
from agent_lsp.memory.experience import Experience
from agent_lsp.memory.index import MemoryIndex
from agent_lsp.memory.initd import InitReport, InitRunner, TaskFacts
from agent_lsp.memory.layout import AGENT_DIR, Layout
from agent_lsp.memory.library import Library, MemoryEntry
from agent_lsp.memory.logs import SessionLog, new_session_id
from agent_lsp.memory.recall import recall
from agent_lsp.memory.state import (
    current_branch,
    load_meta,
    load_task,
    record_files,
    save_meta,
    start_task,
)
from agent_lsp.memory.task import TaskMemory
from agent_lsp.memory.undo import UndoReport, undo_steps
from agent_lsp.messages import ChatMessage, TaskOutcome
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.seams import EditorChannel, Model
from agent_lsp.task import Task, TaskKind


class ResumeOffer(BaseModel):
    """A task cut short by a crash or a restart, which `run_task(..., resume=True)` continues."""

    task_id: str
    task: Task
    title: str
    step: int
    updated: str


class RememberResult(BaseModel):
    path: str | None
    message: str


@dataclass
class _Finished:
    task: Task
    messages: list[ChatMessage]
    outcome: TaskOutcome


def task_goal(task: Task) -> str:
    diag = task.diagnostic
    if task.kind is TaskKind.FIX and diag is not None:
        where = f" in {task.path} at line {diag.line + 1}" if task.path else ""
        goal = f"Fix{where}: {diag.message.splitlines()[0][:200]}"
        return f"{goal}\n{task.instruction.strip()}" if task.instruction.strip() else goal
    return task.instruction.strip()[:1000] or task.title()


def recall_query(task: Task) -> str:
    diag = task.diagnostic
    return " ".join([task.instruction, task.path or "", diag.message if diag else ""])


class ProjectMemory:
    def __init__(self, root: Path, session_id: str | None = None) -> None:
        self.layout = Layout(root)
        reads = self.layout.reads
        self.session_id = session_id or new_session_id()
        self.log = SessionLog(self.layout.logs, self.session_id, reads.top(self.layout.logs))
        self.index = MemoryIndex(self.layout.index, self.layout.memory, reads)
        self.checkpoints = CheckpointStore(self.layout.checkpoints, reads)
        self.library = Library(self.layout, self.index, self.log)
        self.running: TaskMemory | None = None
        self.last: _Finished | None = None
        self._started = False

    @property
    def log_path(self) -> Path:
        return self.log.path

    def open_log(self) -> Path:
        """The session log, created (with its first line) if need be."""
        if not self._started:
            self._started = True
            self.log.record(
                "session",
                "session",
                session=self.session_id,
                root=str(self.layout.root),
                pid=os.getpid(),
                version=__version__,
            )
        return self.log.path

    # -- tasks -----------------------------------------------------------------------------

    async def begin(
        self,
        task: Task,
        channel: EditorChannel,
        workspace: Workspace,
        options: MemorySettings,
        resume: Checkpoint | None = None,
    ) -> TaskMemory:
        self.open_log()
        notices: list[str] = []
        self.layout.reads.policy = workspace.policy.engine_for(self.layout.root)  # path rules
        try:
            await asyncio.to_thread(self.layout.mount)
        except OSError as exc:  # a linked .agent-lsp (or state, memory...): refuse the task
            raise AgentLspError(f"memory not usable: {self._refusal(exc)}") from exc
        if resume is not None:
            cp = resume
            cp.status, cp.pid, cp.session = "running", os.getpid(), self.session_id
            await asyncio.to_thread(self._mark_meta, cp.task_id, "running")
        else:
            await asyncio.to_thread(self._set_aside_interrupted, notices)
            cp = Checkpoint(task_id=os.urandom(4).hex(), task=task, session=self.session_id)
            cp.branch = await asyncio.to_thread(current_branch, self.layout.root) or ""
            await asyncio.to_thread(self._start_task_state, task, cp, notices)
        try:
            lock = self.checkpoints.lock(cp.task_id)
        except OSError as exc:
            raise AgentLspError(f"task {cp.task_id} is running in another process") from exc
        await asyncio.to_thread(self.checkpoints.save, cp)
        recalled = (
            await asyncio.to_thread(
                recall, self.index, recall_query(task), notices, options.max_injected
            )
            if options.inject
            else None
        )
        facts = TaskFacts(
            goal=task_goal(task),
            focus=task.path,
            branch=cp.branch or None,
            recalled=recalled.text if recalled else "",
        )
        scratch = self.layout.state_session / self.session_id
        runner = InitRunner(
            self.layout,
            facts,
            channel,
            options.init_step_timeout,
            self.log,
            scratch,
            policy=workspace.policy,  # the task's gate: its level, rules and answers
        )
        self.log.record(
            "task_start",
            "agent",
            task_id=cp.task_id,
            title=task.title(),
            mode="resumed" if resume else "started",
            step=cp.step,
            recalled=recalled.paths if recalled else [],
            recalled_words=recalled.words if recalled else 0,
        )
        memory = TaskMemory(
            cp,
            self.checkpoints,
            lock,
            runner,
            self.log,
            channel,
            workspace,
            notices=notices,
            recalled=recalled.paths if recalled else [],
            resumed=resume is not None,
        )
        self.running = memory
        return memory

    async def starting_context(
        self,
        goal: str,
        channel: EditorChannel,
        policy: CommandPolicy,
        options: MemorySettings,
        reason: str = "start",
    ) -> tuple[InitReport, list[str]]:
        """The starting context of a task that keeps its own checkpoint (a team task): the
        rules, the project state, the experiences recalled for `goal` and the init.d steps, in
        one init run (the task's gate decides the steps); (the report, the recalled files).
        What the recall could not read is among the report's warnings."""
        self.open_log()
        self.layout.reads.policy = policy.engine_for(self.layout.root)  # path rules
        notices: list[str] = []
        recalled = (
            await asyncio.to_thread(recall, self.index, goal, notices, options.max_injected)
            if options.inject
            else None
        )
        facts = TaskFacts(goal=goal, recalled=recalled.text if recalled else "")
        timeout = options.init_step_timeout
        runner = InitRunner(self.layout, facts, channel, timeout, self.log, policy=policy)
        report = await runner.run(reason)
        report.warnings[:0] = notices
        return report, recalled.paths if recalled else []

    def _set_aside_interrupted(self, notices: list[str]) -> None:
        pending = self.checkpoints.pending(notices)
        if pending is not None:
            pending.status = "discarded"
            self.checkpoints.save(pending)
            notices.append(
                f"the interrupted task {pending.task.title()!r} (step {pending.step}) was not "
                "resumed; `agent-lsp undo` can still revert its changes"
            )

    def _start_task_state(self, task: Task, cp: Checkpoint, notices: list[str]) -> None:
        load_meta(self.layout, notices)  # corrupted old files: a WARN, then replaced
        load_task(self.layout, notices)
        start_task(self.layout, task_goal(task))
        save_meta(
            self.layout,
            {
                "task_id": cp.task_id,
                "title": task.title(),
                "branch": cp.branch,
                "started": cp.started,
                "status": "running",
            },
        )
        record_files(self.layout, task_goal(task))  # the files the goal names, as they are

    async def finish(
        self,
        memory: TaskMemory,
        outcome: TaskOutcome,
        messages: Sequence[ChatMessage],
        model: Model | None,
    ) -> TaskOutcome:
        outcome = outcome.model_copy(update={"task_id": memory.task_id})
        await memory.close(outcome)
        self.running = None
        await asyncio.to_thread(self._mark_meta, memory.task_id, outcome.status.value)
        task = memory.checkpoint.task
        self.last = _Finished(task, list(messages), outcome)
        event = memory.events.event(outcome)
        if event is not None and model is not None:
            note = "; ".join(memory.events.notes)
            try:
                await self.library.distil(
                    task, messages, outcome, event, note, model, memory.channel
                )
            except Exception as exc:  # memory never changes the task's outcome
                await memory.warn(f"no experience saved: {exc!r}")
        return outcome

    def abandon(self, memory: TaskMemory) -> None:
        memory.interrupted()
        self.running = None
        self._mark_meta(memory.task_id, "interrupted")

    def _mark_meta(self, task_id: str, status: str) -> None:
        ignored: list[str] = []
        meta = load_meta(self.layout, ignored)
        if meta.get("task_id") == task_id:
            save_meta(self.layout, {**meta, "status": status})

    # -- resume ----------------------------------------------------------------------------

    def pending(self, warnings: list[str] | None = None) -> Checkpoint | None:
        return self.checkpoints.pending(warnings if warnings is not None else [])

    def offer(self, warnings: list[str] | None = None) -> ResumeOffer | None:
        """The task to offer to resume; checkpoints that cannot be used are said in
        `warnings` (one a repository shipped: not signed by this user)."""
        cp = self.pending(warnings)
        if cp is None:
            return None
        return ResumeOffer(
            task_id=cp.task_id,
            task=cp.task,
            title=cp.task.title(),
            step=cp.step,
            updated=cp.updated,
        )

    def discard(self) -> str | None:
        cp = self.pending()
        if cp is None:
            return None
        cp.status = "discarded"
        self.checkpoints.save(cp)
        self.log.record("task_end", "user", task_id=cp.task_id, status="discarded")
        return cp.task_id

    # -- remember, list, show, forget --------------------------------------------------------

    async def remember(self, note: str, model: Model | None) -> RememberResult:
        note = " ".join(note.split())
        if not note:
            raise AgentLspError("nothing to remember: the note is empty")
        self.open_log()
        self.log.record("memory", "user", action="remember", note=note[:300])
        if self.running is not None:
            self.running.events.notes.append(note)
            return RememberResult(path=None, message="noted; saved with the task when it ends")
        last = self.last
        try:
            if last is not None and model is not None:
                path = await self.library.distil(
                    last.task, last.messages, last.outcome, "remember", note, model, None
                )
                self.last = None
                return RememberResult(path=self.layout.rel(path), message="experience saved")
            words = note.split()
            title = " ".join(words[:10])
            exp = Experience(title=title, event="remember", goal=note, decisions=[note])
            path = await self.library.save(exp, exp.title, [])
        except OSError as exc:  # a link on the way, or a deny path rule: nothing written
            raise AgentLspError(f"not remembered: {self._refusal(exc)}") from exc
        return RememberResult(path=self.layout.rel(path), message="note saved")

    def _refusal(self, exc: OSError) -> str:
        where = self.layout.rel(Path(exc.filename)) if exc.filename else AGENT_DIR
        return f"{where}: {exc.strerror or exc}"

    def entries(self, warnings: list[str]) -> list[MemoryEntry]:
        return self.library.entries(warnings)

    def show(self, name: str) -> str:
        return self.library.show(name)

    def forget(self, name: str) -> str:
        self.open_log()
        return self.library.forget(name)

    # -- undo --------------------------------------------------------------------------------

    async def undo(
        self,
        workspace: Workspace,
        steps: int | None = 1,
        task_id: str | None = None,
        force: bool = False,
    ) -> UndoReport:
        warnings: list[str] = []  # checkpoints that are not this user's: said, never undone
        if task_id:
            cp = self.checkpoints.load(task_id, warnings)
            if cp is None:
                raise AgentLspError("; ".join([f"no checkpoint for task {task_id}", *warnings]))
        else:
            cps = [c for c in self.checkpoints.all(warnings) if any(not s.undone for s in c.steps)]
            if not cps:
                raise AgentLspError(
                    "; ".join(["nothing to undo: no task with file changes left", *warnings])
                )
            cp = cps[-1]
        if self.checkpoints.is_running(cp.task_id):
            raise AgentLspError(f"task {cp.task_id} is still running; cancel it first")
        report = await undo_steps(cp, self.checkpoints, workspace, steps, force)
        self.open_log()
        for rel in report.restored + report.deleted:
            self.log.record("file_change", "user", path=rel, tool="undo", task_id=cp.task_id)
        return report
