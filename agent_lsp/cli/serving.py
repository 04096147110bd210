"""`doctor`'s look at the model server: the context window it serves, whether a task's first
request fits it (built from the real system prompt and tool schemas at the current settings),
whether it streams replies with tools, whether it escapes the prompt — and serving advice that
works for small local models."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_lsp.config.schema import Settings, ToolCalling
from agent_lsp.messages import AgentEvent, ChatMessage, ModelReply, ToolSpec
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.models.server_facts import DEFAULT_WINDOW
from agent_lsp.models.tool_syntax import ESCAPED_NOTE

SERVING = (
    "serve the model with a larger window and its own chat template: "
    "python -m llama_cpp.server --model FILE --n_ctx 16384 (no --chat_format: "
    "chatml-function-calling HTML-escapes the prompt); llama.cpp: llama-server -m FILE -c 16384 "
    "--jinja; Ollama: OLLAMA_CONTEXT_LENGTH=16384 ollama serve (or PARAMETER num_ctx 16384)"
)
PROBE_TASK = "Fix the failing test."  # the first request doctor sizes is this task's


class _Quiet:
    """An editor channel that shows and changes nothing (the first request is only built)."""

    def buffers(self) -> Mapping[Path, str]:
        return {}

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        raise AssertionError("doctor changes nothing")

    async def report(self, event: AgentEvent) -> None:
        return None

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        return None


async def first_request(
    root: Path, settings: Settings, model: OpenAICompatModel
) -> tuple[list[ChatMessage], list[ToolSpec]]:
    """A free-text task's first request as the session sends it: the system prompt (with the
    project's profile) and the task, and every tool's schema (in the prompt with text tools).
    The repo map is left out (it adds up to `REPO_MAP_TOKENS`)."""
    from agent_lsp.loop.control import TaskControl
    from agent_lsp.loop.prompt import build_messages
    from agent_lsp.models.text_tools import to_text_messages
    from agent_lsp.session import Session
    from agent_lsp.task import Task, TaskKind

    session = Session(root, settings, model)
    try:
        channel = _Quiet()
        control = TaskControl(channel, settings.ask_timeout)
        agent = session.make_agent(channel, "", control=control)
        task = Task(kind=TaskKind.TASK, instruction=PROBE_TASK)
        profile = await session.profile()
        messages = build_messages(task, agent.workspace, profile)
        tools = agent.toolbox.specs()
    finally:
        session.close()
    if settings.model.tool_calling is ToolCalling.TEXT:
        return to_text_messages(messages, tools), []
    return messages, tools


async def report_window(
    ok: Callable[[str], None],
    problem: Callable[[str, str], None],
    root: Path,
    settings: Settings,
    model: OpenAICompatModel,
) -> None:
    """The context window the server serves, and whether a task's first request fits it."""
    facts = await model.server_facts()
    if facts.context_window is None and await model.probe_window() is not None:
        facts = model.facts  # learned from its answer to an oversized request
    if facts.context_window is None:
        ok(
            f"  context window: the server does not say; {DEFAULT_WINDOW} assumed (set [model] "
            "contextWindow if it serves fewer)"
        )
    else:
        ok(f"  context window: {facts.context_window} tokens ({facts.window_from})")
    messages, tools = await first_request(root, settings, model)
    size, estimated = await model.count_prompt(messages, tools)
    how = "estimated" if estimated else "counted by the server's tokenizer"
    window = facts.context_window or DEFAULT_WINDOW
    first = f"~{size} ({how})" if estimated else f"{size} ({how})"
    line = f"  first request: {first} tokens with {len(tools) or 'text'} tools, of {window}"
    if size >= window:
        problem(f"{line}: it does NOT fit; every task would fail at once", SERVING)
    elif size * 2 > window:
        problem(
            f"{line}: it fits, but leaves {window - size} tokens for the replies and tool "
            "results of the whole task: it would overflow within a step or two",
            SERVING,
        )
    else:
        ok(f"{line}: fits")


def report_probe(
    ok: Callable[[str], None],
    problem: Callable[[str, str], None],
    model: OpenAICompatModel,
    probe: ModelReply,
) -> None:
    """What the tool-call probe showed of the server: no streaming with tools (remembered),
    a call written as text that cannot run (not words), an HTML-escaped prompt."""
    if not model.facts.stream_tools:
        learned = any("no longer streamed" in n for n in probe.notes)
        when = "found now" if learned else "remembered from an earlier run"
        ok(
            "  streaming: the server cannot stream replies with tools offered "
            f"({when}): they are asked for whole, without a failed stream first"
        )
    if probe.format_error and not probe.tool_calls:
        ok(
            "  the probe's reply was a tool call written as text that cannot run: "
            + probe.format_error
        )
    if ESCAPED_NOTE in probe.notes:
        problem(f"  {ESCAPED_NOTE}", SERVING)
