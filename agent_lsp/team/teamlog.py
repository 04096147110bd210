"""The hooks of a role's run: the team task in the session log like a single one (`agent-lsp
log`, `run --json`): its start and end, and every role's model calls, tool calls and test
verdicts, each with the role and the step it ran for; and the role's part of the project's
memory as its starting context (`team/memory.py`), the same at a compaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_lsp.loop.hooks import NoHooks
from agent_lsp.memory.logs import model_call_fields, tool_call_fields
from agent_lsp.messages import ModelReply, ToolCall, ToolResult, Usage

__all__ = ["Record", "RoleLog"]

Record = Callable[..., None]  # `SessionLog.record(kind, source, **data)`


class RoleLog(NoHooks):
    """The hooks of one run of a role: what it did, into the session log; `memory`, its part
    of the project's memory, built once for the team task."""

    def __init__(
        self, record: Record, task_id: str, role: str, label: str, memory: str = ""
    ) -> None:
        self.record = record
        self.about: dict[str, Any] = {"task_id": task_id, "role": role, "team_step": label}
        self.memory = memory

    async def context(self, reason: str) -> str:
        return self.memory

    async def model_called(
        self, step: int, reply: ModelReply, usage: Usage, seconds: float
    ) -> None:
        purpose = f"team {self.about['role']}"
        fields = model_call_fields(reply, usage, seconds)
        self.record("model_call", "model", step=step, purpose=purpose, **fields, **self.about)

    async def tool_done(
        self, step: int, call: ToolCall, result: ToolResult, seconds: float, changed: bool
    ) -> None:
        fields = tool_call_fields(call, result, seconds)
        self.record("tool_call", "tool", step=step, changed=changed, **fields, **self.about)

    async def tests_checked(self, step: int, ok: bool, summary: str) -> None:
        self.record("tests", "agent", step=step, ok=ok, summary=summary, **self.about)
