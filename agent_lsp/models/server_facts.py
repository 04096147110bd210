"""What a model server accepts, asked of it once and remembered per endpoint and model.

- The context window: llama.cpp's server says it at `GET /props` (`n_ctx`), Ollama at
  `POST /api/show` (`num_ctx` in `parameters`; unset, Ollama serves its default of 4096
  whatever the model allows); llama-cpp-python's server says nothing, so it is learned from its
  HTTP 400 "maximum context length is N tokens" (or llama.cpp's `n_ctx` in its error body).
  `[model] contextWindow`, when set, always wins.
- Whether it streams replies with tools offered (llama-cpp-python's `chatml-function-calling`
  cannot: "Automatic streaming tool choice is not supported").

Remembered in the user's state folder (`$XDG_STATE_HOME/agent-lsp/servers.json`, by default
`~/.local/state/agent-lsp/servers.json`), never in a project, so that the next run neither
pays for a request that cannot work nor overflows a window it could know."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import openai
from openai._types import RequestOptions  # pyright: ignore[reportPrivateImportUsage]

from agent_lsp.config.schema import DEFAULT_CONTEXT_WINDOW
from agent_lsp.messages import ServerFacts

DEFAULT_WINDOW = DEFAULT_CONTEXT_WINDOW
OLLAMA_DEFAULT_CTX = 4096
PROBE_TIMEOUT = 5.0
PROBE_TOKENS = 300_000  # an oversized prompt: longer than any window a local server serves
STATE_NAME = "servers.json"

_WINDOW_ERRORS = (
    re.compile(r"maximum context length is (\d+)"),  # OpenAI, vLLM, llama-cpp-python
    re.compile(r"exceeds? (?:the )?context window of (\d+)"),  # llama-cpp-python's own words
    re.compile(r"context (?:window|size|length)(?: is| of)? (\d+) tokens"),
)


def state_path() -> Path:
    """Where the facts are kept (read from the environment on every call)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agent-lsp" / STATE_NAME


def _key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')} {model}"


def _read_all() -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError, RuntimeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): cast("dict[str, Any]", v)
        for k, v in cast("dict[str, object]", data).items()
        if isinstance(v, dict)
    }


def recall(base_url: str, model: str) -> dict[str, Any]:
    """What was learned about this endpoint and model ({} when nothing)."""
    return _read_all().get(_key(base_url, model), {})


def remember(base_url: str, model: str, **facts: object) -> None:
    """Add facts about this endpoint and model (a folder that cannot be written is no
    error: the facts are then asked again next time)."""
    with contextlib.suppress(OSError, RuntimeError):
        path = state_path()
        everything = _read_all()
        entry = everything.setdefault(_key(base_url, model), {})
        entry.update(facts, seen=int(time.time()))
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".servers-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(everything, out, indent=1, sort_keys=True)
        Path(temp).replace(path)


def window_in_error(message: str, body: object) -> int | None:
    """The context window a "too long" error names, if it names one."""
    if isinstance(body, dict):
        error = cast("dict[str, Any]", body).get("error", body)
        if isinstance(error, dict):
            n_ctx = cast("dict[str, Any]", error).get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                return n_ctx
    for pattern in _WINDOW_ERRORS:
        match = pattern.search(message)
        if match:
            return int(match.group(1))
    return None


def is_context_error(message: str, body: object) -> bool:
    text = message.lower()
    return window_in_error(message, body) is not None or any(
        hint in text
        for hint in ("context_length_exceeded", "exceeds the available context", "context size")
    )


def is_local(base_url: str) -> bool:
    """A server on this machine or a private network (not a hosted API)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _server_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


async def ask_window(
    client: openai.AsyncOpenAI, base_url: str, model: str
) -> tuple[int, str] | None:
    """The context window the server says it serves, and which answer said it; None when it
    says nothing (a hosted API, llama-cpp-python)."""
    root = _server_root(base_url)
    options: RequestOptions = {"timeout": PROBE_TIMEOUT}
    with contextlib.suppress(openai.OpenAIError, ValueError):
        window = _props_window(await client.get(f"{root}/props", cast_to=object, options=options))
        if window:
            return window, "llama.cpp /props"
    with contextlib.suppress(openai.OpenAIError, ValueError):
        show = await client.post(
            f"{root}/api/show", body={"model": model}, cast_to=object, options=options
        )
        return _ollama_window(show)
    return None


async def count_tokens(
    client: openai.AsyncOpenAI, base_url: str, model: str, text: str
) -> int | None:
    """`text` in tokens by the server's own tokenizer; None when it has no tokenizer endpoint."""
    root = _server_root(base_url)
    options: RequestOptions = {"timeout": PROBE_TIMEOUT * 4}
    with contextlib.suppress(openai.OpenAIError, ValueError):
        said = await client.post(
            f"{root}/extras/tokenize/count",
            body={"input": text, "model": model},
            cast_to=object,
            options=options,
        )
        if isinstance(said, dict):
            count = cast("dict[str, Any]", said).get("count")
            if isinstance(count, int):
                return count
    with contextlib.suppress(openai.OpenAIError, ValueError):
        said = await client.post(
            f"{root}/tokenize", body={"content": text}, cast_to=object, options=options
        )
        if isinstance(said, dict):
            tokens = cast("dict[str, Any]", said).get("tokens")
            if isinstance(tokens, list):
                return len(cast("list[object]", tokens))
    return None


def _props_window(data: object) -> int | None:
    if not isinstance(data, dict):
        return None
    props = cast("dict[str, Any]", data)
    settings = props.get("default_generation_settings")
    for source in (settings, props):
        if isinstance(source, dict):
            n_ctx = cast("dict[str, Any]", source).get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                return n_ctx
    return None


def _ollama_window(data: object) -> tuple[int, str] | None:
    if not isinstance(data, dict):
        return None
    show = cast("dict[str, Any]", data)
    parameters = show.get("parameters")
    if isinstance(parameters, str):
        match = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.M)
        if match:
            return int(match.group(1)), "Ollama /api/show (num_ctx)"
    info = show.get("model_info")
    trained = None
    if isinstance(info, dict):
        for key, value in cast("dict[str, Any]", info).items():
            if key.endswith(".context_length") and isinstance(value, int):
                trained = value
    if trained is None:
        return None
    return (
        min(trained, OLLAMA_DEFAULT_CTX),
        f"Ollama's default num_ctx (the model allows {trained}; set num_ctx to serve more)",
    )


def facts_from(remembered: dict[str, Any], setting: int | None) -> ServerFacts:
    """The facts in force: the setting's window when set, else the remembered one."""
    stream_tools = remembered.get("stream_tools") is not False
    if setting is not None:
        return ServerFacts(context_window=setting, window_from="setting", stream_tools=stream_tools)
    window = remembered.get("context_window")
    if isinstance(window, int) and window > 0:
        source = str(remembered.get("window_from") or "remembered")
        return ServerFacts(context_window=window, window_from=source, stream_tools=stream_tools)
    return ServerFacts(stream_tools=stream_tools)
