"""`TaskMemory`: what one task leaves on disk while it runs — the session log, the checkpoint
after every step, file snapshots for undo, the key events that earn an experience — and the
starting context it is given (at start, after compaction, on resume)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from agent_lsp.errors import WorkspaceError
from agent_lsp.memory.checkpoints import Checkpoint, CheckpointStore, TaskLock, record_change
from agent_lsp.memory.initd import InitRunner
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.logs import SessionLog, model_call_fields, tool_call_fields
from agent_lsp.memory.progress import ProgressRecorder
from agent_lsp.memory.state import load_task, set_task_outcome, write_task_section
from agent_lsp.messages import (
    AgentEvent,
    ChatMessage,
    EventKind,
    ModelReply,
    ResumePoint,
    TaskOutcome,
    TaskStatus,
    ToolCall,
    ToolResult,
    Usage,
)
from agent_lsp.project.workspace import Workspace
from agent_lsp.seams import EditorChannel

STACK_FILES = frozenset(
    {
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "Pipfile",
        "poetry.lock",
        "uv.lock",
        "package.json",
        "go.mod",
        "Cargo.toml",
        "Gemfile",
        "pom.xml",
        "build.gradle",
        "composer.json",
        ".tool-versions",
        ".python-version",
        ".nvmrc",
    }
)
INSTALL = re.compile(
    r"\b(?:pip3?|uv|poetry|pipenv|npm|yarn|pnpm|bun|go|cargo|gem|bundle|composer)\s+"
    r"(?:pip\s+)?(?:install|add|get|i)\b"
)
FILE_TOOLS = frozenset({"edit_file", "write_file"})


@dataclass
class KeyEvents:
    """What makes a task worth an experience file."""

    failed_runs: int = 0
    stack: list[str] = field(default_factory=list[str])
    notes: list[str] = field(default_factory=list[str])

    def event(self, outcome: TaskOutcome) -> str | None:
        if outcome.status is TaskStatus.COMPLETED and self.failed_runs and outcome.changed_files:
            return "fail-fix-pass"
        ended = (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.PAUSED)
        if self.stack and outcome.status in ended:
            return "stack-change: " + ", ".join(dict.fromkeys(self.stack))
        if self.notes:
            return "remember"
        return None

    def note_stack(self, what: str) -> None:
        if what not in self.stack:
            self.stack.append(what)


def is_stack_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name in STACK_FILES or (name.startswith("requirements") and name.endswith(".txt"))


class TaskMemory:
    """The agent's hooks for one task (see `agent_lsp.loop.hooks.TaskHooks`)."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        store: CheckpointStore,
        lock: TaskLock,
        runner: InitRunner,
        log: SessionLog,
        channel: EditorChannel,
        workspace: Workspace,
        notices: Sequence[str] = (),
        recalled: Sequence[str] = (),
        resumed: bool = False,
    ) -> None:
        self.checkpoint = checkpoint
        self.store = store
        self.lock = lock
        self.runner = runner
        self.log = log
        self.channel = channel
        self.workspace = workspace
        self.events = KeyEvents()
        self.resumed = resumed
        self._notices = list(notices)
        self._recalled = list(recalled)
        self._warned: set[str] = set()
        self._pending: tuple[str, bytes | None] | None = None
        self.progress = ProgressRecorder(runner.layout)
        self._checked: tuple[bool, str] | None = None  # the harness's own test run this step

    @property
    def task_id(self) -> str:
        return self.checkpoint.task_id

    def resume_point(self) -> ResumePoint | None:
        if not self.resumed:
            return None
        cp = self.checkpoint
        return ResumePoint(
            messages=cp.messages, step=cp.step, usage=cp.usage, changed_files=cp.changed_files
        )

    # -- hooks the agent calls -------------------------------------------------------------

    async def context(self, reason: str) -> str:
        report = await self.runner.run(reason)
        for text in [*self._notices, *(f"conflict: {c}" for c in report.conflicts)]:
            await self.warn(text)
        for text in report.warnings:
            await self.warn(text)
        self._notices = []
        if self._recalled:
            await self.say(f"memory: recalled {', '.join(self._recalled)}")
            self._recalled = []
        self.log.record(
            "init",
            "init",
            message=f"starting context rebuilt ({reason}): {len(report.context)} characters, "
            f"{len(report.conflicts)} conflicts, {len(report.warnings)} warnings",
            reason=reason,
            conflicts=report.conflicts,
        )
        return report.context

    async def model_called(
        self, step: int, reply: ModelReply, usage: Usage, seconds: float
    ) -> None:
        self.log.record(
            "model_call",
            "model",
            step=step,
            purpose="agent",
            **model_call_fields(reply, usage, seconds),
        )

    async def before_tool(self, step: int, call: ToolCall) -> None:
        self._pending = None
        if call.name not in FILE_TOOLS:
            return
        rel = _path_arg(call.arguments)
        if rel is None:
            return
        try:
            path = self.workspace.resolve(rel)
            before = self.workspace.read_bytes(path) if self._exists(path) else None
        except (WorkspaceError, OSError):
            return
        self._pending = (self.workspace.relative(path), before)

    async def tool_done(
        self, step: int, call: ToolCall, result: ToolResult, seconds: float, changed: bool
    ) -> None:
        meta = result.metadata
        self.log.record("tool_call", "tool", step=step, **tool_call_fields(call, result, seconds))
        if call.name == "run_command":
            command = str(_arg(call.arguments, "command") or "")
            self.log.record(
                "command",
                "policy" if str(meta.get("decided_by", "")).startswith("policy") else "user",
                step=step,
                command=command,
                cwd=str(self.workspace.root),
                decided_by=meta.get("decided_by"),
                exit_code=meta.get("exit_code"),
            )
            if result.status.value == "success" and INSTALL.search(command):
                self.events.note_stack(command[:80])
        elif call.name == "run_tests" and meta.get("ok") is False:
            self.events.failed_runs += 1
        elif call.name in ("remember", "update_task") and result.status.value == "success":
            action = "note kept" if call.name == "remember" else "task state updated"
            self.log.record("memory", "agent", step=step, action=action, path=meta.get("path"))
        if changed and self._pending is not None:
            await self._snapshot(step, call.name, *self._pending)
            self.progress.changed(self._pending[0], call)
        self._pending = None
        self.progress.tool(step, call, result)

    async def tests_checked(self, step: int, ok: bool, summary: str) -> None:
        self.log.record("tests", "agent", step=step, ok=ok, summary=summary)
        self._checked = (ok, summary)
        if not ok:
            self.events.failed_runs += 1

    async def compacted(self, step: int, masked: int, summarised: int = 0) -> None:
        self.log.record("compaction", "agent", step=step, masked=masked, summarised=summarised)

    async def step_done(
        self, step: int, messages: Sequence[ChatMessage], usage: Usage, changed: Sequence[str]
    ) -> None:
        cp = self.checkpoint
        cp.step, cp.usage = step, usage
        cp.messages = list(messages)
        cp.changed_files = list(changed)
        await asyncio.to_thread(self.store.save, cp)
        if self._checked is not None:  # the feedback after it names the failures
            ok, summary = self._checked
            last = messages[-1].content or "" if messages else ""
            self.progress.tests(step, ok, summary.split(" in ")[0], last)
            self._checked = None
        await self._keep_state(self.progress.flush, step)

    async def _keep_state(self, write: Callable[..., None], *args: object) -> None:
        """The harness's entries in the task file; a failed write is a WARN, not a stop."""
        try:
            await asyncio.to_thread(write, *args)
        except OSError as exc:
            await self.warn(f"task state not updated: {exc}")

    # -- end of the task -------------------------------------------------------------------

    def interrupted(self, why: BaseException | None = None) -> None:
        """Cancelled or crashed: keep the checkpoint resumable."""
        self.checkpoint.status = "interrupted"
        why = why if why is not None else sys.exc_info()[1]  # called while it is handled
        status = "cancelled" if isinstance(why, asyncio.CancelledError) else "interrupted"
        detail = f" ({type(why).__name__}: {why})" if status == "interrupted" and why else ""
        with contextlib.suppress(OSError):
            self.progress.flush(self.checkpoint.step)
            set_task_outcome(
                self.runner.layout,
                f"{status} at step {self.checkpoint.step}{detail}; the checkpoint is kept "
                "(resume continues from it)",
            )
        try:
            self.store.save(self.checkpoint)
        finally:
            self.lock.release()
        self.log.record("task_end", "agent", task_id=self.task_id, status="interrupted")

    async def close(self, outcome: TaskOutcome) -> None:
        cp = self.checkpoint
        cp.status = "finished"
        cp.outcome = f"{outcome.status.value}: {outcome.summary}"
        if self._checked is not None:  # the last step ended with the harness's test run
            self.progress.tests(outcome.steps, self._checked[0], self._checked[1].split(" in ")[0])
            self._checked = None
        await self._keep_state(self.progress.flush, outcome.steps)
        await self._keep_state(self.progress.finish, outcome)
        try:
            await asyncio.to_thread(self.store.save, cp)
        finally:
            self.lock.release()
        self.log.record(
            "task_end",
            "agent",
            task_id=self.task_id,
            status=outcome.status.value,
            steps=outcome.steps,
            summary=outcome.summary[:300],
            prompt_tokens=outcome.usage.prompt_tokens,
            completion_tokens=outcome.usage.completion_tokens,
            changed_files=outcome.changed_files,
            model_calls=outcome.usage.calls,
            tool_runs=outcome.tool_runs,
            seconds=round(outcome.seconds, 1),
            cost=outcome.cost,
        )

    # -- helpers ---------------------------------------------------------------------------

    async def say(self, text: str) -> None:
        await self.channel.report(AgentEvent(kind=EventKind.MESSAGE, message=text))

    async def warn(self, text: str) -> None:
        if text in self._warned:
            return
        self._warned.add(text)
        self.log.record("warn", "memory", message=text)
        await self.say(f"WARN {text}")

    def _exists(self, path: Path) -> bool:
        return path in self.workspace.channel.buffers() or path.is_file()

    async def _snapshot(self, step: int, tool: str, rel: str, before: bytes | None) -> None:
        try:
            after = self.workspace.read_bytes(self.workspace.resolve(rel))
        except (WorkspaceError, OSError):
            return
        kept = await asyncio.to_thread(
            record_change, self.checkpoint, self.store, step, rel, before, after
        )
        self.log.record("file_change", "agent", step=step, path=rel, tool=tool, undoable=kept)
        if not kept:
            await self.warn(f"{rel}: too large to snapshot; this change cannot be undone")
        if is_stack_file(rel):
            self.events.note_stack(rel)


DONE_HEADING = "### definition of done"


def record_definition_of_done(layout: Layout, definition: str) -> None:
    """Add the task's definition of done (which tests, which diagnostic) to the goal section
    of current-task.md, under its own `###` heading (a sub-heading: the readers of the file
    keep it with the goal); a second call replaces it."""
    state = load_task(layout, [])
    goal = (state.sections.get("goal", "") if state is not None else "").split(DONE_HEADING)[0]
    write_task_section(layout, "goal", f"{goal.rstrip()}\n\n{DONE_HEADING}\n{definition.strip()}")


def _args(arguments: str) -> dict[str, Any]:
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _arg(arguments: str, name: str) -> object:
    return _args(arguments).get(name)


def _path_arg(arguments: str) -> str | None:
    value = _arg(arguments, "path")
    return value if isinstance(value, str) and value.strip() else None
