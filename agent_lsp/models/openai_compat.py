"""`OpenAICompatModel`: the official `openai` client against any OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Sequence
from typing import Any

import openai

from agent_lsp.config.schema import ModelSettings
from agent_lsp.errors import ContextWindowError, ModelError
from agent_lsp.messages import (
    CHARS_PER_TOKEN,
    MESSAGE_FRAMING,
    TOOL_FRAMING,
    TOOLS_PREAMBLE,
    ChatMessage,
    ModelReply,
    ServerFacts,
    ToolCall,
    ToolSpec,
    Usage,
    estimate_request_tokens,
)
from agent_lsp.models import server_facts
from agent_lsp.models.tool_syntax import calls_in_text
from agent_lsp.seams import reply_text, temperature_for

log = logging.getLogger(__name__)


class EndpointError(ModelError):
    """The endpoint failed the call: `status` is its HTTP status, None when it was not
    reached at all (refused, timed out, lost)."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


class EndpointContextError(EndpointError, ContextWindowError):
    """The request did not fit the server's context window (`window`, when it said)."""

    def __init__(self, message: str, status: int, window: int | None) -> None:
        EndpointError.__init__(self, message, status)
        self.window = window


RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_WAIT = 60.0  # the longest Retry-After honoured, in seconds
MIN_OUTPUT_CAP = 256  # the output cap is never lowered below this for a small window


def normalise(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The conversation as strict servers accept it: no `content: null` without tool calls,
    no empty assistant turns, and consecutive user messages joined (chat templates that insist
    on alternating roles)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        data = message.to_openai()
        if data["role"] == "assistant" and not data.get("tool_calls") and not data["content"]:
            continue  # an empty reply carries nothing; some templates choke on it
        if (
            data["role"] == "user"
            and out
            and out[-1]["role"] == "user"
            and "tool_calls" not in out[-1]
        ):
            out[-1] = {**out[-1], "content": f"{out[-1]['content']}\n\n{data['content']}"}
            continue
        out.append(data)
    return out


def _estimate_text(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


class OpenAICompatModel:
    """Native tool calling through `chat.completions`; streaming by default. Retries (429,
    5xx, timeouts, lost connections) are done here, so that each one is reported in the
    reply's notes: status, wait, attempt."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        key = settings.api_key.get_secret_value() if settings.api_key else None
        # Local servers (Ollama, vLLM, llama.cpp) need no key; the client insists on one.
        self._client = openai.AsyncOpenAI(
            api_key=key or "no-key",
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
        )
        self._stream_usage = True  # ask for usage in streams until the endpoint refuses it
        # What is known of the server (remembered per endpoint and model, see server_facts):
        # its context window, and whether it streams replies with tools offered — once a
        # stream of one broke off (llama-cpp-python's chatml-function-calling: "Automatic
        # streaming tool choice is not supported"), such replies are asked for whole.
        self._facts = server_facts.facts_from(
            server_facts.recall(settings.base_url, settings.name), settings.context_window
        )
        self._asked = False  # the server was asked its window (once per model)
        self._replies = 0  # numbers the calls read from a reply's text

    @property
    def facts(self) -> ServerFacts:
        """What is known of the server now (without asking it)."""
        return self._facts

    async def server_facts(self) -> ServerFacts:
        """What the server accepts: the setting's context window when set, else the one the
        server says (llama.cpp /props, Ollama /api/show; asked once, remembered), else the one
        remembered from an earlier run (or its context-length error); None when unknown."""
        if self._asked or self._facts.window_from == "setting":
            return self._facts
        self._asked = True
        said = await server_facts.ask_window(
            self._client, self.settings.base_url, self.settings.name
        )
        if said is not None:
            window, source = said
            self._learn(context_window=window, window_from=source)
        return self._facts

    async def probe_window(self) -> int | None:
        """The window of a local server that says it nowhere (llama-cpp-python): a request far
        longer than any window it could serve, which it refuses after tokenizing it, before
        any evaluation, naming its window (learned and remembered). Only a server on this
        machine or the local network is asked so (a hosted API would bill a prompt it took)."""
        if self._facts.context_window is not None:
            return self._facts.context_window
        if not server_facts.is_local(self.settings.base_url):
            return None
        try:
            await self._client.chat.completions.create(
                model=self.settings.name,
                messages=[{"role": "user", "content": "a " * server_facts.PROBE_TOKENS}],
                max_tokens=1,
                timeout=max(self.settings.timeout, 60.0),
            )
        except openai.APIStatusError as exc:
            text = _error_text(exc)
            window = server_facts.window_in_error(text, exc.body)
            if window is not None and server_facts.is_context_error(text, exc.body):
                self._learn(
                    context_window=window,
                    window_from="learned from the server's context-length error",
                )
            return window
        except openai.OpenAIError:
            return None
        return None

    async def count_prompt(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> tuple[int, bool]:
        """The prompt tokens of a request and whether that is an estimate: counted by the
        server's tokenizer where it has one (llama-cpp-python `/extras/tokenize/count`,
        llama.cpp `/tokenize`; the text and the tools' schemas, plus the template's framing),
        else estimated."""
        text = "\n".join(
            [m.content or "" for m in messages]
            + [c.arguments for m in messages for c in m.tool_calls]
            + [json.dumps(t.to_openai()) for t in tools]
        )
        counted = await server_facts.count_tokens(
            self._client, self.settings.base_url, self.settings.name, text
        )
        if counted is None:
            return estimate_request_tokens(messages, tools), True
        framing = MESSAGE_FRAMING * (len(messages) + sum(len(m.tool_calls) for m in messages))
        if tools:
            framing += TOOLS_PREAMBLE + TOOL_FRAMING * len(tools)
        return counted + framing, False

    @property
    def context_window(self) -> int:
        """The context window in force: known (setting, server) or the 128k default."""
        return self._facts.context_window or server_facts.DEFAULT_WINDOW

    def _learn(self, **facts: object) -> None:
        """Take new facts about the server and remember them for the next run."""
        self._facts = self._facts.model_copy(update=facts)
        server_facts.remember(self.settings.base_url, self.settings.name, **facts)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        cap = self._output_cap(messages, tools)
        request: dict[str, Any] = {
            "model": self.settings.name,
            "messages": normalise(messages),
            "max_tokens": cap,
        }
        if tools:
            request["tools"] = [t.to_openai() for t in tools]
            # The default, said out loud: llama.cpp's chatml-function-calling ignores the tools
            # without it.
            request["tool_choice"] = "auto"
        temperature = temperature_for(self.settings.temperature)
        if temperature is not None:
            request["temperature"] = temperature
        notes: list[str] = []
        reply = await self._with_retries(request, notes)
        usage = reply.usage
        if not usage.prompt_tokens or not usage.completion_tokens:
            # The endpoint reported no usage: an estimate of the whole request (the tools'
            # schemas too, which the template puts in the prompt), said so.
            out = (reply.content or "") + "".join(c.name + c.arguments for c in reply.tool_calls)
            usage = Usage(
                prompt_tokens=usage.prompt_tokens or estimate_request_tokens(messages, tools),
                completion_tokens=usage.completion_tokens or _estimate_text(out),
                estimated=True,
            )
        elif (window := self._facts.context_window) is not None and (
            usage.prompt_tokens + usage.completion_tokens > window
        ):
            # A counted request larger than the window known: the server was restarted with
            # a larger one since it was learned.
            self._learn(context_window=None, window_from="")
        if tools:
            self._replies += 1
            reply = calls_in_text(reply, tools, f"n{self._replies}")
        if reply.finish_reason == "length":
            notes.append(f"the reply was cut at the output cap ({cap} tokens)")
        return reply.model_copy(update={"usage": usage, "notes": [*notes, *reply.notes]})

    def _output_cap(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> int:
        """`maxTokens`, lowered to what a known context window leaves after the prompt (an
        estimate, with a margin): servers such as vLLM refuse a request whose prompt and cap
        together pass the window, llama.cpp's cut the reply there anyway."""
        window = self._facts.context_window
        if window is None:
            return self.settings.max_tokens
        prompt = estimate_request_tokens(messages, tools)
        room = window - prompt - prompt // 10
        return max(
            min(MIN_OUTPUT_CAP, self.settings.max_tokens), min(self.settings.max_tokens, room)
        )

    async def _with_retries(self, request: dict[str, Any], notes: list[str]) -> ModelReply:
        attempt = 0
        while True:
            try:
                return await self._once(request, notes)
            except (openai.APIStatusError, openai.APIConnectionError) as exc:
                status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
                if attempt >= self.settings.max_retries or (
                    status is not None and status not in RETRY_STATUSES
                ):
                    raise self._error(exc, attempt) from exc
                attempt += 1
                wait = _wait(exc, attempt)
                note = f"retry {attempt} of {self.settings.max_retries} after {_what(exc)}"
                note += f"; waited {wait:.1f} s"
                log.warning("model call: %s", note)
                notes.append(note)
                await asyncio.sleep(wait)
            except openai.OpenAIError as exc:
                raise ModelError(f"model call failed: {exc}") from exc

    def _error(
        self, exc: openai.APIStatusError | openai.APIConnectionError, retries: int
    ) -> EndpointError:
        after = f" (after {retries} {'retry' if retries == 1 else 'retries'})" if retries else ""
        if isinstance(exc, openai.APIStatusError):
            text = _error_text(exc)
            if exc.status_code in (400, 413) and server_facts.is_context_error(text, exc.body):
                return self._overflow(exc.status_code, text, exc.body, after)
            return EndpointError(
                f"the model endpoint answered HTTP {exc.status_code}: {_error_text(exc)}{after}",
                exc.status_code,
            )
        return EndpointError(
            f"cannot reach the model at {self.settings.base_url}: {exc}{after}", None
        )

    def _overflow(self, status: int, text: str, body: object, after: str) -> EndpointContextError:
        """The request was longer than the server's window: the window it named is learned
        (and remembered), and the error says how to serve a larger one."""
        window = server_facts.window_in_error(text, body)
        if window is not None and self._facts.window_from != "setting":
            self._learn(
                context_window=window,
                window_from="learned from the server's context-length error",
            )
        size = f"{window} tokens" if window is not None else "too small"
        if window is not None and window >= ROOMY_WINDOW:  # the request, not the server
            advice = "the request is longer than all of it: give a shorter task or less text"
        else:
            n = ROOMY_WINDOW
            advice = (
                f"serve the model with a larger one (llama-cpp-python: --n_ctx {n}; "
                f"llama-server: -c {n}; Ollama: num_ctx {n})"
            )
        message = (
            f"the model endpoint answered HTTP {status}: {text}{after} — the server's context "
            f"window is {size}: {advice}"
        )
        return EndpointContextError(message, status, window)

    async def _once(self, request: dict[str, Any], notes: list[str]) -> ModelReply:
        if not self.settings.stream or ("tools" in request and not self._facts.stream_tools):
            return await self._plain(request)
        try:
            return await self._streamed(request, notes)
        except (StreamBrokenError, openai.APIConnectionError) as exc:
            # The endpoint failed mid-reply (after 200, or before a byte of a reply with tools,
            # as llama.cpp's server does): ask again, whole. A server that is down fails that
            # too, and the retries take over.
            if isinstance(exc, openai.APIConnectionError) and (
                isinstance(exc, openai.APITimeoutError) or "tools" not in request
            ):
                raise
            reply = await self._plain_again(request)
            if "tools" in request:
                self._learn(stream_tools=False)
            note = f"the stream broke off ({exc}): asked again without streaming" + (
                "; replies with tools are no longer streamed (remembered for this endpoint)"
                if "tools" in request
                else ""
            )
            log.warning("model call: %s", note)
            notes.append(note)
            return reply

    async def _plain_again(self, request: dict[str, Any]) -> ModelReply:
        """The whole reply after a broken stream; a kept-alive connection the server dropped
        with it fails at once, so a connection error is tried once more on a fresh one."""
        try:
            return await self._plain(request)
        except openai.APIConnectionError as exc:
            if isinstance(exc, openai.APITimeoutError):
                raise
            await asyncio.sleep(0.5)
            return await self._plain(request)

    async def _streamed(self, request: dict[str, Any], notes: list[str]) -> ModelReply:
        if not self._stream_usage:
            return await self._stream(request)
        try:
            return await self._stream({**request, "stream_options": {"include_usage": True}})
        except openai.APIStatusError as exc:
            text = _error_text(exc).lower()
            if exc.status_code not in (400, 422) or not (
                "stream_options" in text or "include_usage" in text
            ):
                raise
            self._stream_usage = False  # try once without the option
            try:
                reply = await self._stream(request)
            except openai.APIStatusError:
                self._stream_usage = True  # the option was not the problem
                raise exc from None
            note = (
                f"the endpoint refused stream_options (HTTP {exc.status_code}: "
                f"{_error_text(exc)}); streaming without it, token counts estimated"
            )
            log.warning("model call: %s", note)
            notes.append(note)
            return reply

    async def _plain(self, request: dict[str, Any]) -> ModelReply:
        response = await self._client.chat.completions.create(**request)
        if not response.choices:
            raise ModelError("the model endpoint returned no choices")
        choice = response.choices[0]
        message = choice.message
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
            finish_reason=choice.finish_reason,
        )

    async def _stream(self, request: dict[str, Any]) -> ModelReply:
        stream = await self._client.chat.completions.create(**request, stream=True)
        content: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = Usage()
        finish: str | None = None
        chunks = 0
        sink = reply_text.get()  # a front end showing the words as they come
        length = checked = 0  # characters of content so far, and at the last loop check
        looped: int | None = None  # where the reply began to repeat itself
        try:
            async with stream:
                async for chunk in stream:
                    chunks += 1
                    if length - checked >= LOOP_CHECK_EVERY:
                        checked = length
                        if (looped := repeating_from("".join(content))) is not None:
                            break  # leaving the block closes the stream: the server stops
                    if chunk.usage:
                        usage = Usage(
                            prompt_tokens=chunk.usage.prompt_tokens,
                            completion_tokens=chunk.usage.completion_tokens,
                        )
                    for choice in chunk.choices:
                        if choice.finish_reason:
                            finish = choice.finish_reason
                        delta = choice.delta
                        if delta.content:
                            content.append(delta.content)
                            length += len(delta.content)
                            if sink is not None:
                                sink(delta.content)
                        for tc in delta.tool_calls or []:
                            slot = calls.setdefault(
                                tc.index, {"id": "", "name": "", "arguments": ""}
                            )
                            if tc.id:
                                slot["id"] = tc.id
                            if tc.function and tc.function.name:
                                slot["name"] += tc.function.name
                            if tc.function and tc.function.arguments:
                                slot["arguments"] += tc.function.arguments
        except Exception as exc:
            if isinstance(exc, openai.APITimeoutError) or not _dropped(exc):
                raise
            # The endpoint answered 200, then dropped the connection mid-reply.
            raise StreamBrokenError(f"the connection dropped after {chunks} chunks") from exc
        text = "".join(content)
        if looped is None and finish is None:
            raise StreamBrokenError(f"it ended after {chunks} chunks without a finish reason")
        notes: list[str] = []
        if looped is not None:
            unit = text[looped : looped + 40]
            notes.append(
                f"the reply was stopped after {len(text)} characters: from character "
                f"{looped} it repeated {unit!r} over and over; kept up to there"
            )
            log.warning("model call: %s", notes[-1])
            text, finish = text[:looped], "repetition"
        return ModelReply(
            content=text or None,
            tool_calls=[
                ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"])
                for i, s in sorted(calls.items())
            ],
            usage=usage,
            finish_reason=finish,
            notes=notes,
        )


ROOMY_WINDOW = 16_384  # the window to serve a model with (a small window's advice)
LOOP_CHECK_EVERY = 256  # characters of a streamed reply between two looks for a loop
LOOP_SPAN = 1_500  # characters at the end of a reply that must repeat one unit...
LOOP_UNIT = 200  # ...of at most this many characters, for the reply to be a runaway loop


def repeating_from(text: str) -> int | None:
    """Where `text` began to repeat one short unit over and over, when its last `LOOP_SPAN`
    characters are nothing else (None: they are not) — a small model's runaway: the
    benchmark saw a right fix followed by "_ _ _ …" for 2,600 tokens, until the run's time
    was up. So long a stretch of one repeated unit is no file's content."""
    if len(text) < LOOP_SPAN:
        return None
    tail = text[-LOOP_SPAN:]
    for unit in range(1, LOOP_UNIT + 1):
        if tail[unit:] == tail[:-unit]:
            start = len(text) - LOOP_SPAN
            while start > 0 and text[start - 1] == text[start - 1 + unit]:
                start -= 1
            return start
    return None


def _dropped(exc: Exception) -> bool:
    """A connection lost mid-body: the client's own error, or its HTTP library's (whose
    package the openai client chooses), unwrapped."""
    if isinstance(exc, openai.APIConnectionError | ConnectionError):
        return True
    return type(exc).__module__.split(".")[0].startswith("httpx") and type(exc).__name__ in (
        "RemoteProtocolError",
        "ReadError",
    )


class StreamBrokenError(Exception):
    """A stream that ended without a finish reason: the endpoint failed after answering 200."""


def _wait(exc: openai.APIStatusError | openai.APIConnectionError, attempt: int) -> float:
    """Retry-After (seconds, capped) if the endpoint sent one; else exponential backoff."""
    if isinstance(exc, openai.APIStatusError):
        header = exc.response.headers.get("retry-after")
        if header is not None:
            try:
                return min(max(float(header), 0.0), MAX_WAIT)
            except ValueError:
                pass
    return min(0.5 * 2 ** (attempt - 1), 8.0) * (1 + random.random() / 4)


def _what(exc: openai.APIStatusError | openai.APIConnectionError) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {_error_text(exc)}"
    return "a timeout" if isinstance(exc, openai.APITimeoutError) else "a connection error"


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
    return exc.message
