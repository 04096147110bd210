"""`OpenAICompatModel`: the official `openai` client against any OpenAI-compatible endpoint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai

from agent_lsp.errors import ModelError
from agent_lsp.messages import ChatMessage, ModelReply, ToolCall, ToolSpec, Usage
from agent_lsp.settings import ModelSettings


class OpenAICompatModel:
    """Native tool calling through `chat.completions`; streaming by default."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        key = settings.api_key.get_secret_value() if settings.api_key else None
        # Local servers (Ollama, vLLM, llama.cpp) need no key; the client insists on one.
        self._client = openai.AsyncOpenAI(
            api_key=key or "no-key",
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        request: dict[str, Any] = {
            "model": self.settings.name,
            "messages": [m.to_openai() for m in messages],
        }
        if tools:
            request["tools"] = [t.to_openai() for t in tools]
        if self.settings.temperature is not None:
            request["temperature"] = self.settings.temperature
        try:
            if self.settings.stream:
                return await self._stream(request)
            response = await self._client.chat.completions.create(**request)
        except openai.APIConnectionError as exc:
            raise ModelError(f"cannot reach the model at {self.settings.base_url}: {exc}") from exc
        except openai.APIStatusError as exc:
            raise ModelError(
                f"the model endpoint answered HTTP {exc.status_code}: {_error_text(exc)}"
            ) from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"model call failed: {exc}") from exc
        if not response.choices:
            raise ModelError("the model endpoint returned no choices")
        message = response.choices[0].message
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
            for c in message.tool_calls or []
            if c.type == "function"
        ]
        usage = response.usage
        return ModelReply(
            content=message.content,
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
            ),
        )

    async def _stream(self, request: dict[str, Any]) -> ModelReply:
        stream = await self._client.chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )
        content: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = Usage()
        async with stream:
            async for chunk in stream:
                if chunk.usage:
                    usage = Usage(
                        prompt_tokens=chunk.usage.prompt_tokens,
                        completion_tokens=chunk.usage.completion_tokens,
                    )
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        content.append(delta.content)
                    for tc in delta.tool_calls or []:
                        slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                        if tc.id:
                            slot["id"] = tc.id
                        if tc.function and tc.function.name:
                            slot["name"] += tc.function.name
                        if tc.function and tc.function.arguments:
                            slot["arguments"] += tc.function.arguments
        return ModelReply(
            content="".join(content) or None,
            tool_calls=[
                ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"])
                for i, s in sorted(calls.items())
            ],
            usage=usage,
        )


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
    return exc.message
