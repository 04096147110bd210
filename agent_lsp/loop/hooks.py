"""What the loop is given besides the model and the tools: its limits (steps, tokens, time), the
hooks through which the harness keeps the task's memory and progress (TaskHooks; NoHooks does
nothing), and the user's turns (steer notes, the conflict question)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from agent_lsp.messages import (
    ChatMessage,
    ModelReply,
    ToolCall,
    ToolResult,
    Usage,
)


@dataclass(frozen=True)
class Limits:
    max_steps: int = 25
    max_tokens: int = 1_000_000
    context_window: int = 128_000
    compact_at: float = 0.7
    summarise: bool = True  # a model call summarises old turns when masking is not enough
    remind_every: int = 10  # tool calls without a read of the task state before a reminder
    words_in_row: int = 2  # replies in words only, in a row, while the task is not done
    format_errors: int = 3  # replies in a row whose tool call or edit could not be used
    attempts: int = 0  # replies that tried a fix and left the task not done (0: no limit)
    check_after_edit: bool = False  # an edit's result carries the affected tests' verdict


# The review of the changed files (relative paths) before a task is done: its errors, one a
# line (the session builds it from the team reviewer's own checks).
ReviewCheck = Callable[[Sequence[str]], Awaitable[list[str]]]


class TaskHooks(Protocol):
    """What the loop tells the task's memory (log, checkpoints, snapshots, starting context)."""

    async def context(self, reason: str) -> str:
        """The starting context, rebuilt: reason is "start", "compaction" or "resume"."""
        ...

    async def model_called(
        self, step: int, reply: ModelReply, usage: Usage, seconds: float
    ) -> None: ...

    async def before_tool(self, step: int, call: ToolCall) -> None: ...

    async def tool_done(
        self, step: int, call: ToolCall, result: ToolResult, seconds: float, changed: bool
    ) -> None: ...

    async def tests_checked(self, step: int, ok: bool, summary: str) -> None: ...

    async def compacted(self, step: int, masked: int, summarised: int = 0) -> None:
        """`masked` old outputs and feedback; `summarised` old turns replaced by a summary."""
        ...

    async def step_done(
        self, step: int, messages: Sequence[ChatMessage], usage: Usage, changed: Sequence[str]
    ) -> None:
        """The conversation is consistent here: a checkpoint to resume from."""
        ...


class UserTurns(Protocol):
    """The user's part in a running task (see `agent_lsp.loop.control.TaskControl`)."""

    def notes(self) -> list[str]:
        """Steer notes sent since the last step."""
        ...

    async def confirm(self) -> str | None:
        """After a context rebuild: None to go on, else why the task pauses (a conflict)."""
        ...

    def confirmed(self) -> str:
        """After `confirm` said go on: the user's answer to the conflict, for the model."""
        ...


class NoHooks:
    """An agent without memory: no context, nothing recorded."""

    async def context(self, reason: str) -> str:
        return ""

    async def model_called(
        self, step: int, reply: ModelReply, usage: Usage, seconds: float
    ) -> None:
        return None

    async def before_tool(self, step: int, call: ToolCall) -> None:
        return None

    async def tool_done(
        self, step: int, call: ToolCall, result: ToolResult, seconds: float, changed: bool
    ) -> None:
        return None

    async def tests_checked(self, step: int, ok: bool, summary: str) -> None:
        return None

    async def compacted(self, step: int, masked: int, summarised: int = 0) -> None:
        return None

    async def step_done(
        self, step: int, messages: Sequence[ChatMessage], usage: Usage, changed: Sequence[str]
    ) -> None:
        return None
