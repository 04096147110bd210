"""`ScriptedModel`: replays fixed replies. It stands in for an LLM in the demo and in unit tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent_lsp.errors import ModelError
from agent_lsp.messages import ChatMessage, ModelReply, ToolSpec

Step = ModelReply | Callable[[Sequence[ChatMessage]], ModelReply]


class ScriptedModel:
    """Returns its steps in order; a step may be a function of the conversation so far."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self._steps = list(steps)
        self.calls: list[list[ChatMessage]] = []

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        self.calls.append(list(messages))
        if not self._steps:
            raise ModelError("the scripted model has no more replies")
        step = self._steps.pop(0)
        return step(messages) if callable(step) else step
