"""Dispatches the model's tool calls: bad calls become error results the model can read."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from agent_lsp.errors import AgentLspError
from agent_lsp.loop.outputs import OutputKeeper
from agent_lsp.messages import ToolCall, ToolResult, ToolSpec
from agent_lsp.seams import Tool

log = logging.getLogger(__name__)

SLOW_TOOLS = frozenset({"run_tests", "run_command", "ask_user"})  # ask_user: askTimeout


def compact_schema(node: Any) -> Any:
    """The JSON schema without what costs tokens and tells the model nothing: titles, and
    `anyOf [T, null]` with a null default on optional fields (absent means null)."""
    if isinstance(node, list):
        return [compact_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        out[key] = compact_schema(value)
    variants = out.get("anyOf")
    if isinstance(variants, list) and out.get("default", "") is None:
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del out["anyOf"], out["default"]
            out = {**kept[0], **out}
    return out


NOTE_PREFIX = "Note for this project: "


class Described(Protocol):
    """What the model sees of a tool (a `seams.Tool`, or a tool class)."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def args_model(self) -> type[BaseModel]: ...


def tool_spec(tool: Described, note: str = "") -> ToolSpec:
    """What the model sees of `tool`; `note` (the project's, .agent-lsp/tool-notes.toml)
    ends its description."""
    description = f"{tool.description}\n{NOTE_PREFIX}{note}" if note else tool.description
    return ToolSpec(
        name=tool.name,
        description=description,
        parameters=compact_schema(tool.args_model.model_json_schema()),
    )


class ToolBox:
    def __init__(
        self,
        tools: Sequence[Tool],
        timeout: float,
        slow_timeout: float,
        keeper: OutputKeeper | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.timeout = timeout
        self.slow_timeout = slow_timeout
        self.keeper = keeper
        self.notes = dict(notes or {})  # tool name -> the project's note for it
        self._specs: list[ToolSpec] | None = None

    def specs(self) -> list[ToolSpec]:
        """What the model sees of every tool (built once: the schemas do not change)."""
        if self._specs is None:
            self._specs = [tool_spec(t, self.notes.get(t.name, "")) for t in self.tools.values()]
        return self._specs

    async def call(self, call: ToolCall) -> ToolResult:
        result = await self._call(call)
        if self.keeper is not None and result.output:
            result.output = self.keeper.keep(call.name, result.output)
        return result

    async def _call(self, call: ToolCall) -> ToolResult:
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolResult.fail(
                f"unknown tool {call.name!r}; available: {', '.join(sorted(self.tools))}"
            )
        try:
            raw = json.loads(call.arguments or "{}")
        except ValueError as exc:  # not JSON, or an integer too long to read (4300+ digits)
            return ToolResult.fail(f"arguments for {call.name} are not valid JSON: {exc}")
        try:
            args = tool.args_model.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            return ToolResult.fail(f"invalid arguments for {call.name}: {problems}")
        slow = call.name in SLOW_TOOLS or getattr(tool, "slow", False) is True  # project tools
        limit = self.slow_timeout if slow else self.timeout
        try:
            return await asyncio.wait_for(tool.run(args), limit)
        except TimeoutError:
            return ToolResult.fail(f"{call.name} timed out after {limit:.0f} s")
        except AgentLspError as exc:
            return ToolResult.fail(str(exc))
        except OSError as exc:
            return ToolResult.fail(f"{call.name}: {exc}")
        except Exception as exc:  # a failing tool is reported, never fatal
            log.exception("tool %s crashed", call.name)
            return ToolResult.fail(f"internal error in {call.name}: {exc!r}")
