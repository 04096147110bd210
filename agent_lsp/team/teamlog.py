"""A team task in the session log like a single one (`agent-lsp log`, `run --json`): its start
and end, and every role's model calls, tool calls and test verdicts, each with the role and the
step it ran for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_lsp.loop.hooks import NoHooks
from agent_lsp.messages import ModelReply, ToolCall, ToolResult, Usage

__all__ = ["Record", "RoleLog"]

Record = Callable[..., None]  # `SessionLog.record(kind, source, **data)`
REPLY_CHARS = 2_000  # of a role's reply, in the log


class RoleLog(NoHooks):
    """The hooks of one run of a role: what it did, into the session log."""

    def __init__(self, record: Record, task_id: str, role: str, label: str) -> None:
        self.record = record
        self.about: dict[str, Any] = {"task_id": task_id, "role": role, "team_step": label}

    async def model_called(
        self, step: int, reply: ModelReply, usage: Usage, seconds: float
    ) -> None:
        self.record(
            "model_call",
            "model",
            step=step,
            purpose=f"team {self.about['role']}",
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            latency_ms=round(seconds * 1000),
            tool_calls=[c.name for c in reply.tool_calls],
            reply=(reply.content or "")[:REPLY_CHARS],
            finish_reason=reply.finish_reason,
            estimated=usage.estimated,
            **self.about,
        )

    async def tool_done(
        self, step: int, call: ToolCall, result: ToolResult, seconds: float, changed: bool
    ) -> None:
        self.record(
            "tool_call",
            "tool",
            step=step,
            tool=call.name,
            arguments=call.arguments[:300],
            status=result.status.value,
            error=result.error,
            duration_ms=round(seconds * 1000),
            changed=changed,
            **self.about,
        )

    async def tests_checked(self, step: int, ok: bool, summary: str) -> None:
        self.record("tests", "agent", step=step, ok=ok, summary=summary, **self.about)
