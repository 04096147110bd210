"""The agent loop: prompt + tools + loop, until the tests pass or a limit is reached."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from agent_lsp.compaction import compact, estimate_tokens
from agent_lsp.errors import ModelError
from agent_lsp.loopguard import LoopGuard
from agent_lsp.messages import (
    AgentEvent,
    ChatMessage,
    EventKind,
    ModelReply,
    TaskOutcome,
    TaskStatus,
    ToolCall,
    Usage,
)
from agent_lsp.prompt import build_messages
from agent_lsp.seams import EditorChannel, Model
from agent_lsp.task import Task
from agent_lsp.tools import ToolBox
from agent_lsp.verify import Verifier, format_report
from agent_lsp.workspace import Workspace


@dataclass(frozen=True)
class Limits:
    max_steps: int = 25
    max_tokens: int = 1_000_000
    context_window: int = 128_000
    compact_at: float = 0.7


class Agent:
    """One task. Stops when: done (tests pass), max steps, token budget, a loop (paused),
    a model error, or cancellation — each reported as the outcome's stop reason."""

    def __init__(
        self,
        model: Model,
        toolbox: ToolBox,
        workspace: Workspace,
        channel: EditorChannel,
        verifier: Verifier | None,
        profile: str,
        limits: Limits,
        repo_map: str = "",
    ) -> None:
        self.repo_map = repo_map
        self.model = model
        self.toolbox = toolbox
        self.workspace = workspace
        self.channel = channel
        self.verifier = verifier
        self.profile = profile
        self.limits = limits
        self.guard = LoopGuard()
        self.usage = Usage()
        self.messages: list[ChatMessage] = []

    async def run(self, task: Task) -> TaskOutcome:
        self.messages = build_messages(task, self.workspace, self.profile, self.repo_map)
        await self._emit(EventKind.STARTED, f"started: {task.title()}")
        step = 0
        try:
            while (limit := self._limit_reached(step)) is None:
                step += 1
                await self._compact_if_needed(step)
                reply = await self._ask_model(step)
                if reply.tool_calls:
                    await self._run_tools(reply.tool_calls, step)
                    if loop := self.guard.looping():
                        return self._outcome(TaskStatus.PAUSED, f"paused: {loop}", step, "loop")
                    continue
                done, feedback = await self._check_done(step)
                if done:
                    return self._outcome(
                        TaskStatus.COMPLETED, reply.content or "done", step, "done"
                    )
                self.messages.append(ChatMessage(role="user", content=feedback))
        except ModelError as exc:
            return self._outcome(TaskStatus.ERROR, f"model error: {exc}", step, "model error")
        except asyncio.CancelledError:
            await self._emit(EventKind.FINISHED, "cancelled", step)
            raise
        return self._outcome(TaskStatus.FAILED, limit, step, limit.split(" (")[0])

    def _limit_reached(self, step: int) -> str | None:
        if step >= self.limits.max_steps:
            return f"max steps ({self.limits.max_steps}) reached without passing tests"
        used = self.usage.prompt_tokens + self.usage.completion_tokens
        if used >= self.limits.max_tokens:
            return f"token budget ({used} of {self.limits.max_tokens} tokens) used up"
        return None

    async def _compact_if_needed(self, step: int) -> None:
        threshold = int(self.limits.context_window * self.limits.compact_at)
        if estimate_tokens(self.messages) <= threshold:
            return
        self.messages, masked = compact(self.messages)
        await self._emit(EventKind.MESSAGE, f"context compacted: {masked} old outputs masked", step)

    async def _ask_model(self, step: int) -> ModelReply:
        await self._emit(EventKind.THINKING, "asking the model", step)
        reply = await self.model.complete(self.messages, self.toolbox.specs())
        usage = reply.usage
        if not usage.prompt_tokens:  # the endpoint reported nothing: estimate
            usage = Usage(prompt_tokens=estimate_tokens(self.messages))
        self.usage = Usage(
            prompt_tokens=self.usage.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens + usage.completion_tokens,
        )
        self.messages.append(
            ChatMessage(role="assistant", content=reply.content, tool_calls=reply.tool_calls)
        )
        if reply.content and reply.tool_calls:
            await self._emit(EventKind.MESSAGE, reply.content, step)
        return reply

    async def _run_tools(self, calls: Sequence[ToolCall], step: int) -> None:
        for call in calls:
            await self._emit(
                EventKind.TOOL_CALL, f"{call.name} {call.arguments[:120]}", step, tool=call.name
            )
            result = self.guard.refusal(call) or await self.toolbox.call(call)
            self.guard.record(call, result, self.workspace.edit_count)
            summary = result.error or (result.output.splitlines()[0] if result.output else "")
            await self._emit(
                EventKind.TOOL_RESULT,
                f"{call.name}: {result.status.value}{': ' + summary if summary else ''}",
                step,
                tool=call.name,
                status=result.status.value,
            )
            self.messages.append(
                ChatMessage(role="tool", tool_call_id=call.id, content=result.for_model())
            )

    async def _check_done(self, step: int) -> tuple[bool, str]:
        """Done is decided by the tests, not by the model's word."""
        if self.verifier is None or self.verifier.passed_since(self.workspace):
            return True, ""
        await self._emit(EventKind.TOOL_CALL, "checking: running the test suite", step)
        report = await self.verifier.run(self.workspace)
        await self._emit(EventKind.TOOL_RESULT, f"tests: {report.summary()}", step)
        if report.ok:
            return True, ""
        return False, (
            "The task is not done: the test suite does not pass on the current text.\n"
            + format_report(report)
            + "\nKeep working until the tests pass."
        )

    def _outcome(self, status: TaskStatus, summary: str, step: int, reason: str) -> TaskOutcome:
        return TaskOutcome(
            status=status,
            summary=summary.strip(),
            steps=step,
            stop_reason=reason,
            usage=self.usage,
            changed_files=list(self.workspace.changed_files),
        )

    async def _emit(self, kind: EventKind, message: str, step: int = 0, **data: object) -> None:
        await self.channel.report(AgentEvent(kind=kind, message=message, step=step, data=data))
