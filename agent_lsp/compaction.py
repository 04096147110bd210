"""Keeps the conversation inside the model's window: old tool outputs are masked; the task, the
user's instructions, the model's conclusions and the last turns stay whole."""

from __future__ import annotations

from collections.abc import Sequence

from agent_lsp.messages import ChatMessage

CHARS_PER_TOKEN = 4


def estimate_tokens(messages: Sequence[ChatMessage]) -> int:
    """A rough count (≈4 characters per token) — good enough to decide when to compact."""
    chars = 0
    for m in messages:
        chars += len(m.content or "") + 16
        chars += sum(len(c.name) + len(c.arguments) + 16 for c in m.tool_calls)
    return chars // CHARS_PER_TOKEN


def compact(messages: Sequence[ChatMessage], keep_last: int = 10) -> tuple[list[ChatMessage], int]:
    """Mask tool results older than the last `keep_last` messages; returns (messages, masked)."""
    cut = max(len(messages) - keep_last, 0)
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[ChatMessage] = []
    masked = 0
    for index, message in enumerate(messages):
        if (
            index < cut
            and message.role == "tool"
            and not (message.content or "").startswith("[compacted")
        ):
            tool = names.get(message.tool_call_id or "", "tool")
            first = (message.content or "").splitlines()[0][:160] if message.content else ""
            out.append(
                message.model_copy(
                    update={
                        "content": f"[compacted: output of {tool} omitted to save context; "
                        f"it began: {first}] Call the tool again if you need it."
                    }
                )
            )
            masked += 1
        else:
            out.append(message)
    return out, masked
