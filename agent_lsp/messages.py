"""Typed values that cross the seams: chat messages, tool calls, tool results, agent events."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    """A tool call the model asked for; `arguments` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


class ChatMessage(BaseModel):
    """One message of the conversation, in the OpenAI chat shape."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list[ToolCall])
    tool_call_id: str | None = None

    def to_openai(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        return data


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ModelReply(BaseModel):
    """What one model call returned."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list[ToolCall])
    usage: Usage = Field(default_factory=Usage)


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class ToolStatus(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    PARTIAL = "partial"


class ToolResult(BaseModel):
    """The result of every tool: `{status, output, error, metadata}`."""

    status: ToolStatus
    output: str = ""
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict[str, Any])

    @classmethod
    def ok(cls, output: str, **metadata: Any) -> ToolResult:
        return cls(status=ToolStatus.SUCCESS, output=output, metadata=metadata)

    @classmethod
    def fail(cls, error: str, output: str = "", **metadata: Any) -> ToolResult:
        return cls(status=ToolStatus.ERROR, error=error, output=output, metadata=metadata)

    def for_model(self) -> str:
        """The text the model reads back for this result."""
        return self.model_dump_json(exclude_defaults=False)


class EventKind(StrEnum):
    STARTED = "started"
    THINKING = "thinking"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    EDIT = "edit"
    MESSAGE = "message"
    FINISHED = "finished"


class AgentEvent(BaseModel):
    """Something the agent did, for progress displays and logs."""

    kind: EventKind
    message: str
    step: int = 0
    data: dict[str, Any] = Field(default_factory=dict[str, Any])


class TaskStatus(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PAUSED = "paused"
    ERROR = "error"


class TaskOutcome(BaseModel):
    """How a task ended, and why."""

    status: TaskStatus
    summary: str
    steps: int = 0
    stop_reason: str = ""
    usage: Usage = Field(default_factory=Usage)
    changed_files: list[str] = Field(default_factory=list[str])
    task_id: str = ""  # the checkpoint under .agent-lsp/checkpoints/ (resume, undo)


class ResumePoint(BaseModel):
    """Where a task interrupted by a crash or a restart picks up: its conversation so far."""

    messages: list[ChatMessage]
    step: int = 0
    usage: Usage = Field(default_factory=Usage)
    changed_files: list[str] = Field(default_factory=list[str])
