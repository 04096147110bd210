"""The `reply_text` seam: a model's words go to the sink a front end set while they stream in,
never the text tool protocol's (its words hold the tool calls' syntax)."""

from __future__ import annotations

from collections.abc import Sequence

from agent_lsp.messages import ChatMessage, ModelReply, ToolSpec
from agent_lsp.models.text_tools import TextToolModel
from agent_lsp.seams import reply_text


class Inner:
    def __init__(self) -> None:
        self.sinks: list[object] = []

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        self.sinks.append(reply_text.get())
        return ModelReply(content="done")


async def test_the_text_tool_protocol_shows_nothing_live_and_restores_the_sink() -> None:
    heard: list[str] = []
    inner = Inner()
    token = reply_text.set(heard.append)
    try:
        await TextToolModel(inner).complete([ChatMessage(role="user", content="hi")], [])
        assert reply_text.get() == heard.append  # the front end's sink again, after the call
    finally:
        reply_text.reset(token)
    assert inner.sinks == [None] and heard == []
