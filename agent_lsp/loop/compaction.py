"""Keeps the conversation inside the model's window. First old tool outputs and old test
feedback are masked; when that is not enough, one model call summarises the older turns (the
task, decisions, failures, files touched). The system prompt, the user's instructions and the
last turns (an assistant message with its tool results is one turn) always stay whole."""

from __future__ import annotations

from collections.abc import Sequence

from agent_lsp.messages import ChatMessage, ModelReply
from agent_lsp.seams import Model

KEEP_TURNS = 10
MIN_SUMMARISED_TURNS = 4  # fewer older turns than this: masking only
MASKED = "[compacted"
SUMMARY_HEAD = "[Summary of the earlier conversation"
# User messages the harness writes (test feedback, reminders): compacted like tool outputs.
# Every other user message is the user's instruction and stays whole.
FEEDBACK_PREFIXES = (
    "The task is not done",
    "Your reply was cut",
    "Reminder:",
    MASKED,
    SUMMARY_HEAD,
)
TOOL_CHARS = 1500  # of each tool output in the summarisation request

SUMMARY_PROMPT = """\
You compress the earlier part of a coding agent's conversation so that it can keep working
with less context. Write a factual summary in markdown with these sections:
## Task - what the user asked for, in their words where they matter.
## Decisions - what was decided and why.
## Failures - errors and failing tests seen, and whether they were fixed.
## Files touched - each file read or changed, and what changed.
## State - where the work stands and what was about to happen next.
Keep names, paths, test ids and error messages exact. Do not invent anything. No preamble."""


def is_feedback(message: ChatMessage) -> bool:
    return message.role == "user" and (message.content or "").startswith(FEEDBACK_PREFIXES)


def turn_cut(messages: Sequence[ChatMessage], keep_turns: int = KEEP_TURNS) -> int:
    """The index where the last `keep_turns` turns begin (each at an assistant message)."""
    starts = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if len(starts) <= keep_turns:
        return len(messages) if not starts else starts[0]
    return starts[-keep_turns]


def compact(
    messages: Sequence[ChatMessage], keep_turns: int = KEEP_TURNS
) -> tuple[list[ChatMessage], int]:
    """Mask tool results and test feedback older than the last `keep_turns` turns; returns
    (messages, masked)."""
    cut = turn_cut(messages, keep_turns)
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[ChatMessage] = []
    masked = 0
    for index, message in enumerate(messages):
        text = message.content or ""
        old = index < cut and not text.startswith((MASKED, SUMMARY_HEAD))
        first = text.splitlines()[0][:160] if text else ""
        if old and message.role == "tool":
            tool = names.get(message.tool_call_id or "", "tool")
            text = (
                f"{MASKED}: output of {tool} omitted to save context; it began: {first}] "
                "Call the tool again if you need it."
            )
        elif old and is_feedback(message):
            text = f"{MASKED}: earlier feedback omitted; it began: {first}]"
        else:
            out.append(message)
            continue
        out.append(message.model_copy(update={"content": text}))
        masked += 1
    return out, masked


def older_turns(messages: Sequence[ChatMessage], keep_turns: int = KEEP_TURNS) -> int:
    """How many turns before the kept ones a summary would replace."""
    cut = turn_cut(messages, keep_turns)
    return sum(m.role == "assistant" for m in messages[:cut])


def summary_request(
    messages: Sequence[ChatMessage], keep_turns: int = KEEP_TURNS, budget_chars: int = 200_000
) -> list[ChatMessage]:
    """The one request that summarises everything before the last `keep_turns` turns."""
    cut = turn_cut(messages, keep_turns)
    lines: list[str] = []
    for message in messages[:cut]:
        if message.role == "system":
            continue
        text = message.content or ""
        if message.role == "tool" and len(text) > TOOL_CHARS:
            text = text[:TOOL_CHARS] + f" [... {len(text) - TOOL_CHARS} more characters]"
        calls = "".join(f"\n  -> {c.name} {c.arguments[:300]}" for c in message.tool_calls)
        lines.append(f"[{message.role}] {text}{calls}")
    transcript = "\n".join(lines)
    if len(transcript) > budget_chars:  # the oldest part goes first
        transcript = "[... earlier part cut]\n" + transcript[-budget_chars:]
    return [
        ChatMessage(role="system", content=SUMMARY_PROMPT),
        ChatMessage(role="user", content=f"The conversation so far:\n\n{transcript}"),
    ]


def with_summary(
    messages: Sequence[ChatMessage], summary: str, keep_turns: int = KEEP_TURNS
) -> list[ChatMessage]:
    """The system prompt, every user instruction (whole, in order), the summary, then the
    last `keep_turns` turns as they were."""
    cut = turn_cut(messages, keep_turns)
    head = [m for m in messages[:cut] if m.role == "system"]
    asked = [m for m in messages[:cut] if m.role == "user" and not is_feedback(m)]
    turns = sum(m.role == "assistant" for m in messages[:cut])
    note = ChatMessage(
        role="user",
        content=f"{SUMMARY_HEAD}: {turns} turns, summarised to save context]\n{summary.strip()}",
    )
    return [*head, *asked, note, *messages[cut:]]


async def summarise(
    model: Model, messages: Sequence[ChatMessage], keep_turns: int = KEEP_TURNS
) -> ModelReply:
    """One model call, no tools; raises `ModelError` (the caller keeps the masked history)."""
    return await model.complete(summary_request(messages, keep_turns), [])
