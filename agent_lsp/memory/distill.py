"""The one extra model call after a key event: the task's transcript in, an experience out.
If the call fails or its answer cannot be read, a plainer experience is written from the
transcript itself (and a WARN says so)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from agent_lsp.errors import ModelError
from agent_lsp.memory.experience import Experience
from agent_lsp.messages import ChatMessage, TaskOutcome, Usage
from agent_lsp.seams import Model
from agent_lsp.task import Task

TRANSCRIPT_CHARS = 12_000
PROMPT = """\
You distil a finished coding task into a short experience note that will help with similar \
tasks in this project later. Answer with one JSON object and nothing else:
{"topic": "3 to 6 words, lowercase", "tags": ["a few keywords"],
 "symbols": ["functions or classes involved"], "goal": "one sentence",
 "steps": ["what was done, in order"], "key_decisions": ["decision - reason"],
 "pitfalls": ["what went wrong or could, and how to avoid it"], "open_questions": ["..."]}
Be concrete (file names, commands, error messages); at most 5 items per list."""
DEF = re.compile(r"\b(?:def|class|function|func|fn)\s+([A-Za-z_]\w*)")


def transcript(
    task: Task, messages: Sequence[ChatMessage], outcome: TaskOutcome, note: str = ""
) -> str:
    """The task as a compact text: the request, each call with its result's first lines."""
    lines = [f"Task: {task.title()}"]
    if task.instruction:
        lines.append(task.instruction.strip()[:600])
    if note:
        lines.append(f"The user asked to remember: {note}")
    for m in messages:
        if m.role == "assistant":
            if m.content:
                lines.append(f"assistant: {m.content.strip()[:400]}")
            lines.extend(f"call {c.name} {c.arguments[:300]}" for c in m.tool_calls)
        elif m.role == "tool":
            lines.append("result: " + _brief(m.content or "", 6, 500))
        elif m.role == "user" and len(lines) > 2:
            lines.append("feedback: " + _brief(m.content or "", 8, 600))
    lines.append(f"Outcome: {outcome.status.value} after {outcome.steps} steps: {outcome.summary}")
    if outcome.changed_files:
        lines.append("Changed: " + ", ".join(outcome.changed_files))
    text = "\n".join(lines)
    if len(text) > TRANSCRIPT_CHARS:
        half = TRANSCRIPT_CHARS // 2
        text = text[:half] + "\n[...]\n" + text[-half:]
    return text


def _brief(text: str, rows: int, chars: int) -> str:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        parts = [str(data.get(key) or "") for key in ("error", "output")]
        text = f"{data.get('status', '')}: " + "\n".join(p for p in parts if p)
    return "\n  ".join(text.strip().splitlines()[:rows])[:chars]


async def distill(
    model: Model,
    task: Task,
    messages: Sequence[ChatMessage],
    outcome: TaskOutcome,
    event: str,
    note: str = "",
) -> tuple[Experience, str, Usage, str | None]:
    """(experience, topic, usage, warning): one model call, no tools."""
    text = transcript(task, messages, outcome, note)
    request = [
        ChatMessage(role="system", content=PROMPT),
        ChatMessage(role="user", content=text),
    ]
    try:
        reply = await model.complete(request, [])
    except ModelError as exc:
        exp, topic = fallback(task, messages, outcome, event, note)
        return exp, topic, Usage(), f"experience distillation failed ({exc}); wrote a plain one"
    data = parse_reply(reply.content or "")
    if data is None:
        exp, topic = fallback(task, messages, outcome, event, note)
        return exp, topic, reply.usage, "the distillation answer was not JSON; wrote a plain one"
    topic = _text(data.get("topic"))
    exp = Experience(
        title=topic[:1].upper() + topic[1:] if topic else task.title(),
        event=event,
        tags=_strings(data.get("tags")),
        files=list(outcome.changed_files),
        symbols=_strings(data.get("symbols")) or symbols_in(messages),
        goal=_text(data.get("goal")) or task.title(),
        steps=_strings(data.get("steps")),
        decisions=_strings(data.get("key_decisions")),
        pitfalls=_strings(data.get("pitfalls")),
        open_questions=_strings(data.get("open_questions")),
    )
    if note:
        exp.decisions.insert(0, f"The user asked to remember: {note}")
    return exp, topic or task.title(), reply.usage, None


def parse_reply(text: str) -> dict[str, object] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _text(value: object) -> str:
    return " ".join(str(value).split())[:300] if isinstance(value, str | int | float) else ""


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [t for t in (_text(v) for v in value[:8]) if t]


def symbols_in(messages: Sequence[ChatMessage]) -> list[str]:
    """Names defined in the code the agent edited."""
    found: dict[str, None] = {}
    for m in messages:
        for call in m.tool_calls:
            if call.name in ("edit_file", "write_file"):
                for name in DEF.findall(call.arguments):
                    found.setdefault(name, None)
    return list(found)[:10]


def fallback(
    task: Task, messages: Sequence[ChatMessage], outcome: TaskOutcome, event: str, note: str
) -> tuple[Experience, str]:
    """An experience from the transcript alone: the calls made and the failures seen."""
    steps = [
        f"{c.name} {c.arguments[:120]}"
        for m in messages
        for c in m.tool_calls
        if c.name in ("edit_file", "write_file", "run_tests", "run_command")
    ][:8]
    failures = [
        line.strip()[:200]
        for m in messages
        if m.role in ("tool", "user")
        for line in (m.content or "").replace("\\n", "\n").splitlines()
        if line.strip().startswith("FAILED ")
    ]
    tests = [m.group(1) for f in failures if (m := re.search(r"::([\w\[\]-]+)", f))]
    exp = Experience(
        title=task.title(),
        event=event,
        tags=[event.split(":")[0]],
        files=list(outcome.changed_files),
        symbols=list(dict.fromkeys([*symbols_in(messages), *tests]))[:10],
        goal=task.instruction.strip()[:300] or task.title(),
        steps=steps,
        decisions=[f"The user asked to remember: {note}"] if note else [],
        pitfalls=list(dict.fromkeys(failures))[:5],
        open_questions=[] if outcome.status.value == "completed" else [outcome.summary[:200]],
    )
    return exp, task.title()
