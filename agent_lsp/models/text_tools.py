"""A plain-text tool protocol for models without native tool calling.

The tools are described in the system prompt; the model answers with blocks

    <tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>

and tool results go back as user messages. The agent loop does not know the difference."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from agent_lsp.errors import ModelError
from agent_lsp.messages import ChatMessage, ModelReply, ServerFacts, ToolSpec
from agent_lsp.models.tool_syntax import parse_tool_calls
from agent_lsp.seams import Model, reply_text, server_facts_of

log = logging.getLogger(__name__)

TIGHT = (",", ":")

PROTOCOL = """\
You call tools by writing, anywhere in your answer, one block per call:
<tool_call>{{"name": "<tool name>", "arguments": {{...}}}}</tool_call>
The results come back in the next message. Answer without any block when you are done.
Tools (JSON schema of the arguments):
{tools}"""


# A small model's form (the small-model profile): each tool on one line, its arguments by
# name only ("?" when optional) — its fix is written as a whole file in words; a tool is for
# what it was not shown. The schemas still check every call, and a wrong one is answered
# with the exact syntax.
PROTOCOL_SHORT = """\
When you need something you were not shown, call a tool by writing a block like
<tool_call>{{"name": "read_file", "arguments": {{"path": "src/util.py"}}}}</tool_call>
Tools:
{tools}"""


def describe_tools_short(tools: Sequence[ToolSpec]) -> str:
    lines: list[str] = []
    for t in tools:
        props = t.parameters.get("properties")
        names = list(props) if isinstance(props, dict) else []  # pyright: ignore[reportUnknownArgumentType]
        required = t.parameters.get("required")
        needed = set(required) if isinstance(required, list) else set()  # pyright: ignore[reportUnknownArgumentType]
        args = ", ".join(str(n) + ("" if n in needed else "?") for n in names)  # pyright: ignore[reportUnknownVariableType]
        first = t.description.split(". ")[0].rstrip(".")
        lines.append(f"- {t.name} {{{args}}}: {first}.")
    return "\n".join(lines)


def describe_tools(tools: Sequence[ToolSpec]) -> str:
    return "\n".join(
        f"- {t.name}: {t.description}\n  arguments: {json.dumps(t.parameters, separators=TIGHT)}"
        for t in tools
    )


def to_text_messages(
    messages: Sequence[ChatMessage], tools: Sequence[ToolSpec], short: bool = False
) -> list[ChatMessage]:
    """Rewrite a native-tool conversation into plain system/user/assistant messages (`short`:
    the tools in a small model's form)."""
    protocol = (
        PROTOCOL_SHORT.format(tools=describe_tools_short(tools))
        if short
        else PROTOCOL.format(tools=describe_tools(tools))
    )
    out: list[ChatMessage] = []
    for m in messages:
        if m.role == "system":
            text = f"{m.content or ''}\n\n{protocol}"
            out.append(ChatMessage(role="system", content=text))
        elif m.role == "assistant":
            blocks = [
                f'<tool_call>{{"name": {json.dumps(c.name)}, "arguments": {c.arguments or "{}"}}}'
                "</tool_call>"
                for c in m.tool_calls
            ]
            out.append(
                ChatMessage(role="assistant", content="\n".join([m.content or "", *blocks]).strip())
            )
        elif m.role == "tool":
            result = f'<tool_result id="{m.tool_call_id}">\n{m.content}\n</tool_result>'
            if (
                out
                and out[-1].role == "user"
                and (out[-1].content or "").startswith("<tool_result")
            ):
                out[-1] = ChatMessage(role="user", content=f"{out[-1].content}\n{result}")
            else:
                out.append(ChatMessage(role="user", content=result))
        else:
            out.append(m)
    return out


class TextToolModel:
    """Wraps any Model; tools travel in the text, never in the `tools` parameter."""

    def __init__(self, inner: Model, short: bool = False) -> None:
        self.inner = inner
        self.short = short  # the tools in a small model's form
        self._turn = 0

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        self._turn += 1
        quiet = reply_text.set(None)  # its words hold the tool calls' syntax: not shown live
        try:
            reply = await self.inner.complete(to_text_messages(messages, tools, self.short), [])
        finally:
            reply_text.reset(quiet)
        parsed = parse_tool_calls(reply.content or "", tools, str(self._turn))
        if not parsed.calls and parsed.error is None:
            return reply
        # A native call the endpoint sends anyway is taken as it is.
        return reply.model_copy(
            update={
                "content": parsed.prose or None,
                "tool_calls": [*reply.tool_calls, *parsed.calls],
                "format_error": parsed.error,
            }
        )

    async def server_facts(self) -> ServerFacts | None:
        return await server_facts_of(self.inner)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


def refuses_tools(error: ModelError) -> bool:
    text = str(error).lower()
    return (
        "http 400" in text and any(hint in text for hint in ("tool", "function", "not support"))
    ) or ("http 422" in text and "tool" in text)


class AutoToolModel:
    """Native tool calling, switching to the text protocol for good when the endpoint refuses
    tools, or when the model shows it does not make tool calls before it ever made one: the
    loop could not accept an answer in words although tools were offered
    (`answered_in_words`) — early, not after the task is lost. An answer in words that ends a
    task (an explanation) switches nothing. Calls the model writes in its text in its own
    format (`<tool_call>` blocks, JSON) are read by the native path itself (`tool_syntax`)."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.text: TextToolModel | None = None
        self._native_seen = False
        self._note: str | None = None  # said with the next reply (the session log)

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        if self.text is not None:
            reply = await self.text.complete(messages, tools)
            return self._noted(reply)
        try:
            reply = await self.inner.complete(messages, tools)
        except ModelError as exc:
            if not tools or not refuses_tools(exc):
                raise
            log.warning("the endpoint refused native tool calls (%s); using text tools", exc)
            self.text = TextToolModel(self.inner)
            reply = await self.text.complete(messages, tools)
            note = f"the endpoint refused native tool calls ({exc}): switched to text tools"
            return reply.model_copy(update={"notes": [note, *reply.notes]})
        if reply.tool_calls:
            self._native_seen = True
            return reply
        return reply

    def answered_in_words(self) -> None:
        """The loop could not accept the last answer (words, no tool call): a model that never
        made a native tool call is given the text protocol from the next call on."""
        if self.text is not None or self._native_seen:
            return
        self.text = TextToolModel(self.inner)
        self._note = (
            "the model answered in words without a tool call although tools were offered: "
            "switched to text tools (toolCalling = auto)"
        )
        log.warning("%s", self._note)

    def _noted(self, reply: ModelReply) -> ModelReply:
        if self._note is None:
            return reply
        note, self._note = self._note, None
        return reply.model_copy(update={"notes": [note, *reply.notes]})

    async def server_facts(self) -> ServerFacts | None:
        return await server_facts_of(self.inner)

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
