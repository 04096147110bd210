"""The small protocols the core is written against. Implementations do not inherit from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from agent_lsp.messages import (
    AgentEvent,
    ChatMessage,
    ModelReply,
    ServerFacts,
    ToolResult,
    ToolSpec,
)

# How warm the next request samples, when the loop asks for it: a small model at temperature 0
# that answered with nothing usable answers the same way again, word for word. After such a
# reply the loop sets a floor for its next request; the model client sends the higher of it and
# the configured temperature (`temperature_for`). A context variable, so it reaches the client
# through every wrapper (text tools, routes) and only for that task's request.
MIN_TEMPERATURE: ContextVar[float | None] = ContextVar("min_temperature", default=None)


def temperature_for(configured: float | None) -> float | None:
    """The temperature to send: the configured one, raised to the loop's floor when one is
    set (None: the endpoint's default)."""
    floor = MIN_TEMPERATURE.get()
    if floor is None:
        return configured
    return max(floor, configured or 0.0)


# Where the words of a model's reply go as they stream in, for a front end that shows them live
# (ACP's agent messages); None, the default: nobody listens. A front end sets it (in the task's
# context) for the model calls it wants to show; a model wrapper whose inner replies are not
# plain words (the text tool protocol) clears it for them. A sink never raises.
reply_text: ContextVar[Callable[[str], None] | None] = ContextVar("reply_text", default=None)


class Model(Protocol):
    """A chat model with tool calling."""

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        """Return the model's next reply; raise `ModelError` when the endpoint fails."""
        ...


@runtime_checkable
class KnowsServer(Protocol):
    """A model that can say what its server accepts (`OpenAICompatModel` and the wrappers
    around it): the context window, whether it streams with tools."""

    async def server_facts(self) -> ServerFacts | None: ...


async def server_facts_of(model: object) -> ServerFacts | None:
    """What `model`'s server accepts, if the model can tell (see `KnowsServer`)."""
    if not isinstance(model, KnowsServer):
        return None
    facts: object = await model.server_facts()
    return facts if isinstance(facts, ServerFacts) else None


class EditorChannel(Protocol):
    """How the core meets the user: the editor over LSP, or a terminal."""

    def buffers(self) -> Mapping[Path, str]:
        """The text of every open buffer (unsaved edits included), by absolute path."""
        ...

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        """Replace the text of `path` (the buffer if open, else the file); or raise
        `EditRejectedError`."""
        ...

    async def report(self, event: AgentEvent) -> None:
        """Show progress / log an event."""
        ...

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        """Ask the user to choose one of `options`; None means no answer (treated as deny)."""
        ...


class Tool(Protocol):
    """A model-facing tool: a name, a pydantic argument model (its schema is what the model
    sees) and `run`."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def args_model(self) -> type[BaseModel]: ...
    @property
    def read_only(self) -> bool: ...

    async def run(self, args: Any) -> ToolResult: ...
