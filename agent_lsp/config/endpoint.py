"""Whether the model settings can work at all, before anything is sent: a base URL that is a
URL (scheme, host, a port in range), and a key for an endpoint that always needs one. Used by
`agent-lsp doctor` and `agent-lsp run`, which say what is wrong and what to do instead of a
connection error or a crash deep in the HTTP client."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from agent_lsp.config.schema import ModelSettings

# Endpoints that answer nothing without a key (a local server needs none).
KEYED_HOSTS = ("api.openai.com",)
LOCAL_EXAMPLES = (
    "AGENT_LSP_BASE_URL=http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 "
    "(llama.cpp, vLLM)"
)


@dataclass(frozen=True)
class EndpointProblem:
    """What is wrong with the model settings (`text`) and the next step (`next_step`)."""

    text: str
    next_step: str


def base_url_problem(base_url: str, origin: str) -> EndpointProblem | None:
    """`base_url` (set in `origin`) is not a usable http(s) URL: why, and how to write it."""
    where = f"[model] baseUrl (from {origin})"
    value = base_url.strip()
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:  # a port that is not a number, or out of range
        return EndpointProblem(
            f"the model endpoint {base_url!r} is not a valid URL: {exc}",
            f"set {where} to the server's URL with a port from 1 to 65535, "
            "e.g. http://127.0.0.1:8080/v1",
        )
    if parts.scheme not in ("http", "https") or not parts.netloc:
        whole = "http://" + (value.split("//", 1)[1] if "//" in value else value)
        if urlsplit(whole).path in ("", "/"):
            whole = whole.rstrip("/") + "/v1"
        return EndpointProblem(
            f"the model endpoint {base_url!r} is not an http:// or https:// URL",
            f"write {where} in full, with its scheme: {whole}",
        )
    if not parts.hostname:
        return EndpointProblem(
            f"the model endpoint {base_url!r} names no host",
            f"set {where} to the server's URL, e.g. http://127.0.0.1:8080/v1",
        )
    if port == 0:
        return EndpointProblem(
            f"the model endpoint {base_url!r} has port 0",
            f"set {where} to the port the server listens on, e.g. http://127.0.0.1:8080/v1",
        )
    return None


def endpoint_problem(model: ModelSettings, origin: str = "the settings") -> EndpointProblem | None:
    """The first reason the model settings cannot work (None: worth trying): a base URL that is
    not a URL, or no API key for an endpoint that needs one (with nothing configured, that is
    api.openai.com: the key, or a local endpoint, is what is missing)."""
    problem = base_url_problem(model.base_url, origin)
    if problem is not None:
        return problem
    host = (urlsplit(model.base_url.strip()).hostname or "").lower()
    if model.api_key is None and host in KEYED_HOSTS:
        return EndpointProblem(
            f"no API key for {model.base_url} (baseUrl from {origin}), and it answers nothing "
            "without one",
            "set AGENT_LSP_API_KEY (or OPENAI_API_KEY) in the environment or [model] apiKey in "
            f"~/.config/agent-lsp/config.toml; or use a local server: {LOCAL_EXAMPLES}. "
            "`agent-lsp demo` needs neither",
        )
    return None
