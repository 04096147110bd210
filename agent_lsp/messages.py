"""Typed values that cross the seams: chat messages, tool calls, tool results, agent events."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
        content = self.content
        if content is None and self.role == "assistant":
            # Strict servers reject `content: null` on an assistant message: without tool calls
            # (most), and even with them (llama.cpp's server).
            content = ""
        data: dict[str, Any] = {"role": self.role, "content": content}
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
    """Tokens used (summed over a task's model calls). `estimated`: at least one count was
    estimated from the text (≈4 characters a token) because the endpoint reported none."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0  # model calls made (0 on a single reply's usage)
    estimated: bool = False

    def plus(self, other: Usage) -> Usage:
        """This total with one more call's usage added."""
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + max(other.calls, 1),
            estimated=self.estimated or other.estimated,
        )

    def since(self, earlier: Usage) -> Usage:
        """What was used after `earlier` (a total this one went on from)."""
        return Usage(
            prompt_tokens=max(0, self.prompt_tokens - earlier.prompt_tokens),
            completion_tokens=max(0, self.completion_tokens - earlier.completion_tokens),
            calls=max(0, self.calls - earlier.calls),
            estimated=self.estimated,
        )


class ModelReply(BaseModel):
    """What one model call returned. `finish_reason` as the endpoint said ("stop",
    "tool_calls", "length": cut at the output cap), or "repetition": a streamed reply stopped
    where it began to repeat itself over and over (its text kept up to there); `notes` are
    what happened on the way (retries and their waits, a fallback, a switch of tool
    protocol), for the log.
    `format_error`: the reply meant to call a tool in its text but the call cannot be run
    (broken JSON, an unknown tool, missing required arguments): what was wrong and the syntax
    expected, to be said to the model; those calls are not in `tool_calls`."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list[ToolCall])
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    notes: list[str] = Field(default_factory=list[str])
    # a tool call the reply tried to make and that could not be used (bad JSON, an unknown
    # tool, a missing argument), said exactly, for the correction the model is sent
    format_error: str | None = None

    @property
    def cut(self) -> bool:
        """The reply was cut at the output cap (`[model] maxTokens`)."""
        return self.finish_reason == "length"


class ServerFacts(BaseModel):
    """What the model's server is known to accept. `context_window`: tokens of prompt and
    reply together, None when unknown; `window_from` says who said it ("setting", "llama.cpp
    /props", "Ollama /api/show (num_ctx)", "learned from the server's context-length error");
    `stream_tools`: False once the server failed to stream a reply with tools offered."""

    context_window: int | None = None
    window_from: str = ""
    stream_tools: bool = True


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

    def as_text(self) -> str:
        """The result as plain text, for a small model (JSON-escaped lines are harder for it to
        read): the status in brackets, the output, the error."""
        parts = [f"[{self.status.value}]", self.output.rstrip()]
        if self.error:
            parts.append(f"error: {self.error}")
        return "\n".join(p for p in parts if p)


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
    # False when the task "completed" without a test run to prove it (no test runner, or the
    # tests were not permitted): the model's word only. `agent-lsp run` exits 3 then.
    verified: bool = True
    # What proved the outcome: "verified: full suite: 12 passed, …; diagnostic '…' at
    # calc.py:3 gone (…)" ("" when nothing was checked).
    checked: str = ""
    # The fix's diagnostic, asked again of its source: "diagnostic '…' at calc.py:3 gone
    # (re-checked by pylsp)", "… still there (…)", "… could not be re-checked (…)"; "" if none.
    rechecked: str = ""
    seconds: float = 0.0  # wall time of this run (a resumed task: since it resumed)
    tool_runs: int = 0  # tool calls run in this run
    # this run's share of `usage` (a resumed or continued task: since it went on; `usage` is
    # the task's whole); None: all of it
    run_usage: Usage | None = None
    cost: float | None = None  # USD, from [model.price]; None when no price is set


class ResumePoint(BaseModel):
    """Where a task interrupted by a crash or a restart picks up: its conversation so far."""

    messages: list[ChatMessage]
    step: int = 0
    usage: Usage = Field(default_factory=Usage)
    changed_files: list[str] = Field(default_factory=list[str])
    hint: str | None = None  # set: the user continues a stopped task with these words


CHARS_PER_TOKEN = 4
MESSAGE_FRAMING = 5  # tokens a chat template adds around each message (role, markers)
TOOLS_PREAMBLE = 100  # tokens a template puts before the tools (Qwen2.5's: ~100)
TOOL_FRAMING = 2  # tokens around each tool's schema


def estimate_tokens(messages: Sequence[ChatMessage]) -> int:
    """A rough count (≈4 characters per token) — good enough to decide when to compact."""
    chars = 0
    for m in messages:
        chars += len(m.content or "") + 16
        chars += sum(len(c.name) + len(c.arguments) + 16 for c in m.tool_calls)
    return chars // CHARS_PER_TOKEN


def estimate_request_tokens(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> int:
    """A rough count of a whole request's prompt: the messages, their framing, and the tools'
    schemas, which chat templates render into the prompt (with 14 tools, most of a first
    request). Measured on a first request (14 tools) with Qwen2.5-Coder's tokenizer and
    template: 2,562 estimated for 2,509 tokens (counting the messages alone gave 359)."""
    chars = 0
    for m in messages:
        chars += len(m.content or "")
        chars += sum(len(c.name) + len(c.arguments) for c in m.tool_calls)
    schemas = sum(len(json.dumps(t.to_openai())) for t in tools)
    framing = MESSAGE_FRAMING * (len(messages) + sum(len(m.tool_calls) for m in messages))
    if tools:
        framing += TOOLS_PREAMBLE + TOOL_FRAMING * len(tools)
    return (chars + schemas) // CHARS_PER_TOKEN + framing
