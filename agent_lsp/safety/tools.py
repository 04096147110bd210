"""`guard_tools`: the level and the tool rules in front of every tool (deny: the tool fails
with the reason; ask: the user answers first)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agent_lsp.messages import ToolResult
from agent_lsp.seams import Tool

if TYPE_CHECKING:
    from agent_lsp.safety.policy import CommandPolicy

__all__ = ["GuardedTool", "guard_tools"]


class GuardedTool:
    def __init__(self, tool: Tool, gate: CommandPolicy) -> None:
        self.tool = tool
        self.gate = gate

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description

    @property
    def args_model(self) -> type[BaseModel]:
        return self.tool.args_model

    @property
    def read_only(self) -> bool:
        return self.tool.read_only

    @property
    def slow(self) -> bool:
        """Given the slow tools' time (it may ask the user, it runs a command)."""
        return getattr(self.tool, "slow", False) is True

    async def run(self, args: Any) -> ToolResult:
        if getattr(self.tool, "self_gated", False):  # asks in its own place (run_tests)
            return await self.tool.run(args)
        decision = await self.gate.check_tool(self.tool.name, self.tool.read_only)
        if not decision.allowed:
            return ToolResult.fail(
                f"{self.name} is not available: {decision.decided_by}",
                decided_by=decision.decided_by,
            )
        return await self.tool.run(args)


def guard_tools(tools: Sequence[Tool], gate: CommandPolicy) -> list[Tool]:
    return [GuardedTool(t, gate) for t in tools]
