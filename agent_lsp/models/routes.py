"""`model.routes`: some task kinds (explain, suggestions, fix, task, distillation) sent to
another model, e.g. a local one. When the routed model fails — its endpoint is down, answers
5xx, or does not know the model (404) — the main model answers instead; the reply's notes say
so (the session log records them) and the route is left alone for a while."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence

from pydantic import SecretStr

from agent_lsp.config.schema import ModelRoute, ModelSettings
from agent_lsp.errors import ModelError
from agent_lsp.messages import ChatMessage, ModelReply, ServerFacts, ToolSpec
from agent_lsp.models.openai_compat import EndpointError, OpenAICompatModel
from agent_lsp.seams import Model, server_facts_of

log = logging.getLogger(__name__)

ROUTES = ("explain", "suggestions", "fix", "task", "distillation")
RESTING_SECONDS = 60.0  # after a fallback, the main model answers this long before a retry


def route_settings(
    main: ModelSettings, route: ModelRoute, environ: Mapping[str, str] | None = None
) -> ModelSettings:
    """The main model's settings with the route's name, endpoint, key and output cap. The
    main key goes only to the main endpoint: another endpoint gets the key named by
    `apiKeyEnv`, or none."""
    environ = os.environ if environ is None else environ
    base_url = route.base_url or main.base_url
    if route.api_key_env:
        value = environ.get(route.api_key_env)
        key = SecretStr(value) if value else None
    else:
        key = main.api_key if base_url.rstrip("/") == main.base_url.rstrip("/") else None
    return main.model_copy(
        update={
            "name": route.name,
            "base_url": base_url,
            "api_key": key,
            "max_tokens": route.max_tokens or main.max_tokens,
        }
    )


def falls_back(exc: ModelError) -> bool:
    """A failure of the route's endpoint (not of the request): down, 5xx, unknown model."""
    if not isinstance(exc, EndpointError):
        return False
    return exc.status is None or exc.status >= 500 or exc.status == 404


class RoutedModel:
    """The route's model, with the main one behind it."""

    def __init__(self, kind: str, routed: Model, main: Model, where: str) -> None:
        self.kind = kind
        self.routed = routed
        self.main = main
        self.where = where  # "name at base_url", for the notes
        self._resting_until = 0.0

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        if time.monotonic() < self._resting_until:
            reply = await self.main.complete(messages, tools)
            note = f"model route {self.kind}: {self.where} failed recently; the main model answered"
            return reply.model_copy(update={"notes": [note, *reply.notes]})
        try:
            return await self.routed.complete(messages, tools)
        except ModelError as exc:
            if not falls_back(exc):
                raise
            note = f"model route {self.kind}: {self.where} failed ({exc}); the main model answered"
            log.warning("%s", note)
            self._resting_until = time.monotonic() + RESTING_SECONDS
        reply = await self.main.complete(messages, tools)
        return reply.model_copy(update={"notes": [note, *reply.notes]})

    async def server_facts(self) -> ServerFacts | None:
        return await server_facts_of(self.routed)

    async def aclose(self) -> None:
        close = getattr(self.routed, "aclose", None)
        if close is not None:
            await close()


def routed_model(kind: str, main_settings: ModelSettings, main: Model) -> Model:
    """The model for `kind`: the main one unless `model.routes.<kind>` names another."""
    route = getattr(main_settings.routes, kind, None)
    if not isinstance(route, ModelRoute):
        return main
    settings = route_settings(main_settings, route)
    where = f"{settings.name} at {settings.base_url}"
    return RoutedModel(kind, OpenAICompatModel(settings), main, where)
