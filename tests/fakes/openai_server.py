# pyright: reportPrivateUsage=false
"""A scriptable, in-process fake of the OpenAI chat-completions HTTP API.

Tests point the real ``openai`` client at :attr:`FakeOpenAIServer.base_url` and script the
replies the "model" gives::

    with FakeOpenAIServer() as srv:
        srv.script(Reply(tool_calls=[ToolCall("read_file", {"path": "a.py"})]), Reply("done"))
        client = OpenAI(api_key="test-key", base_url=srv.base_url, max_retries=0)
        ...
        assert srv.requests[0]["messages"][0]["role"] == "system"

Each ``POST /v1/chat/completions`` consumes one script entry (FIFO):

* :class:`Reply` -- an assistant message (content and/or tool calls);
* :class:`Error` -- an HTTP error with an OpenAI-style body (and optional ``Retry-After``);
* :class:`Hang` -- wait, then answer with the entry queued next (for client-timeout tests);
* a callable ``(request_body) -> Reply | Error`` -- a reply computed from the request.

:meth:`FakeOpenAIServer.script_for` keeps a script of its own for the requests whose system
prompt or first user message holds a marker (team mode's ``[team role: planner]``, a step's
id): those requests take from it first, so parallel conversations each get their own replies.

When the queue is empty, :attr:`FakeOpenAIServer.default_reply` answers; if that is ``None``
the request fails with HTTP 500 "fake server: script exhausted".

Requests with ``"stream": true`` are answered with server-sent events in the same shape as
OpenAI's (role delta, content pieces, tool-call deltas, finish chunk, optional usage chunk,
``data: [DONE]``). Standard library only.

It can also behave like the real servers a user runs (llama.cpp, older vLLM, proxies):

* ``max_tokens`` in a request is honoured: a longer reply is cut there and finishes with
  ``"length"`` (a rambling model, :func:`ramble`);
* ``stream_usage=False``: streams carry no usage, whatever ``stream_options`` asks;
* ``reject_stream_options=True``: a request with ``stream_options`` is refused with HTTP 400;
* ``strict=True``: messages are validated like llama.cpp's Python server does; an assistant
  message with ``content: null`` (with or without tool calls) and other malformed messages get
  HTTP 500;
* ``broken_tool_streams=True``: a streamed reply that calls a tool breaks off after its first
  chunk (200, then the connection drops: no finish, no ``[DONE]``, the body unfinished), as
  llama.cpp's server does ("Automatic streaming tool choice is not supported");
  ``broken_tool_streams="start"``: the connection drops before any byte of such a reply;
* ``broken_tool_streams="request"``: every streamed request that offers tools gets 200 and a
  stream that ends without a chunk, whatever the reply (llama-cpp-python's
  ``chatml-function-calling``: "Automatic streaming tool choice is not supported");
* ``models=[...]``: the names ``GET /v1/models`` lists;
* ``props={...}``: answered at ``GET /props`` (llama.cpp's server: ``n_ctx`` in
  ``default_generation_settings``); ``show={...}``: answered at ``POST /api/show`` (Ollama:
  ``model_info``, ``parameters``); unset, both are 404 (llama-cpp-python, hosted APIs);
* ``context_window=N`` (131072 unless said, as every server has one; None: no limit): a
  request whose prompt (counted as :func:`prompt_tokens` counts it)
  does not fit is refused with HTTP 400 in llama-cpp-python's words ("This model's maximum
  context length is N tokens. However, you requested …"), or with ``context_error="llama.cpp"``
  in llama.cpp's (``exceed_context_size_error`` with ``n_ctx`` in the error body);
* ``tokenizer="llama.cpp"``: ``POST /tokenize`` (``{"content"}`` -> ``{"tokens": [...]}``);
  ``tokenizer="llama-cpp-python"``: ``POST /extras/tokenize/count`` (``{"input"}`` ->
  ``{"count": n}``); ≈4 characters a token.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, TypeAlias, cast

__all__ = [
    "Error",
    "FakeOpenAIServer",
    "Hang",
    "Reply",
    "ReplyFunc",
    "ScriptEntry",
    "ToolCall",
    "ramble",
]

FAKE_MODEL_ID = "fake-model"
EXHAUSTED_MESSAGE = "fake server: script exhausted"
CHARS_PER_TOKEN = 4
BREAK = "\x00break"  # a stream event that drops the connection (see broken_tool_streams)


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """The prompt tokens the fake counts against its context window: the messages' and
    tools' JSON, ≈4 characters a token."""
    return len(json.dumps([body.get("messages"), body.get("tools")])) // CHARS_PER_TOKEN


def ramble(words: int = 20_000) -> str:
    """A reply that goes on and on, as a small model without an output cap does."""
    return " ".join(f"and then step {n} of the plan," for n in range(words // 6 + 1))


@dataclass(frozen=True)
class ToolCall:
    """One function call in an assistant reply.

    ``arguments`` given as a mapping is JSON-encoded; given as a string it is sent verbatim
    (so a test can send malformed JSON). ``id`` defaults to ``call_<n>``.
    """

    name: str
    arguments: str | Mapping[str, object]
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True)
class Reply:
    """An assistant message. ``usage`` is ``(prompt_tokens, completion_tokens)``."""

    content: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] | None = None
    cut: bool = False  # cut at the request's max_tokens (set by the server)

    @property
    def finish_reason(self) -> str:
        if self.cut:
            return "length"
        return "tool_calls" if self.tool_calls else "stop"

    def capped(self, max_tokens: object) -> Reply:
        """This reply as a server honouring ``max_tokens`` sends it (≈4 characters a token)."""
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            return self
        limit = max_tokens * CHARS_PER_TOKEN
        if len(self.content or "") <= limit:
            return self
        prompt = self.usage[0] if self.usage else None
        usage = (prompt, max_tokens) if prompt is not None else None
        return Reply((self.content or "")[:limit], (), usage, cut=True)


@dataclass(frozen=True)
class Error:
    """An HTTP error response with an OpenAI-style ``{"error": {...}}`` body."""

    status: int = 500
    message: str = "injected error"
    retry_after: float | None = None
    body: Mapping[str, object] | None = None  # sent as it is instead of the OpenAI shape


@dataclass(frozen=True)
class Hang:
    """Wait ``seconds`` (or until the server stops), then answer with the next entry."""

    seconds: float


ReplyFunc: TypeAlias = Callable[[dict[str, Any]], Reply | Error]
"""A reply computed from the parsed request body."""
ScriptEntry: TypeAlias = Reply | Error | Hang | ReplyFunc
"""Anything :meth:`FakeOpenAIServer.script` accepts."""


def _error_type(status: int) -> tuple[str, str | None]:
    """The OpenAI ``error.type`` / ``error.code`` that go with an HTTP status."""
    if status == 400:
        return "invalid_request_error", None
    if status == 401:
        return "authentication_error", "invalid_api_key"
    if status == 403:
        return "permission_error", None
    if status == 404:
        return "not_found_error", None
    if status == 429:
        return "rate_limit_error", "rate_limit_exceeded"
    if status >= 500:
        return "server_error", None
    return "invalid_request_error", None


def _invalid_messages(messages: object) -> str | None:
    """What a strict server (llama.cpp's request validation) finds wrong with `messages`."""
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for n, message in enumerate(cast("list[object]", messages)):
        if not isinstance(message, dict):
            return f"messages[{n}] is not an object"
        m = cast("dict[str, Any]", message)
        role, content = m.get("role"), m.get("content")
        if role not in ("system", "user", "assistant", "tool"):
            return f"messages[{n}]: unknown role {role!r}"
        if role == "assistant":
            if content is None and not m.get("tool_calls"):
                return f"messages[{n}]: assistant message with content null and no tool calls"
            if content is None:  # llama-cpp-python 0.3: a string even with tool calls
                return f"messages[{n}]: assistant message content must be a string"
        elif not isinstance(content, str):
            return f"messages[{n}]: {role} message content must be a string"
        if role == "tool" and not m.get("tool_call_id"):
            return f"messages[{n}]: tool message without tool_call_id"
    return None


def _head_text(body: dict[str, Any]) -> str:
    """The system prompt and the first user message of a request (where markers are read)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    texts: list[str] = []
    users = 0
    for message in cast("list[object]", messages):
        if not isinstance(message, dict):
            continue
        m = cast("dict[str, Any]", message)
        content = m.get("content")
        if not isinstance(content, str):
            continue
        if m.get("role") == "system":
            texts.append(content)
        elif m.get("role") == "user" and users == 0:
            texts.append(content)
            users += 1
    return "\n".join(texts)


def _split(text: str, pieces: int) -> list[str]:
    """Split ``text`` into ``pieces`` consecutive parts (some may be empty if text is short)."""
    if pieces <= 1:
        return [text]
    size = max(1, -(-len(text) // pieces))
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    while len(parts) < pieces:
        parts.append("")
    return parts


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, fake: FakeOpenAIServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, cancelled streams) are expected; stay quiet about those.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # -- routing ---------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._drain_body()
        fake = self._fake()
        fake._record_other("GET", self._route(), None)
        if self._route() == "/props" and fake.props is not None:
            self._send_json(200, fake.props)
        elif self._route() == "/v1/models":
            names = self._fake().models
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": n, "object": "model", "owned_by": "fake"} for n in names],
                },
            )
        else:
            self._send_not_found()

    def do_POST(self) -> None:
        raw = self._drain_body()
        fake = self._fake()
        if self._route() == "/api/show" and fake.show is not None:
            fake._record_other("POST", self._route(), raw)
            self._send_json(200, fake.show)
            return
        counted = fake._tokenized(self._route(), raw)
        if counted is not None:
            self._send_json(200, counted)
            return
        if self._route() != "/v1/chat/completions":
            fake._record_other("POST", self._route(), raw)
            self._send_not_found()
            return
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._send_error(Error(400, f"fake server: malformed JSON body: {exc}"))
            return
        if not isinstance(body, dict):
            self._send_error(Error(400, "fake server: request body must be a JSON object"))
            return
        headers = {key.lower(): value for key, value in self.headers.items()}
        fake._record(body, headers)
        refusal = fake._refusal(body)
        if refusal is not None:
            self._send_error(refusal)
            return
        if body.get("stream") and body.get("tools") and fake.broken_tool_streams == "request":
            # 200, then a stream that ends without a chunk: llama-cpp-python's server raised
            # "Automatic streaming tool choice is not supported" inside it.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        answer = fake._answer_for(body)
        if isinstance(answer, Reply):
            answer = answer.capped(body.get("max_tokens", body.get("max_completion_tokens")))
        if isinstance(answer, Error):
            self._send_error(answer)
        elif body.get("stream") and answer.tool_calls and fake.broken_tool_streams == "start":
            self.close_connection = True  # failed before a byte of the reply
        elif body.get("stream"):
            self._send_stream(fake, answer, body, len(raw))
        else:
            self._send_json(200, fake._completion(answer, body, len(raw)))

    def do_PUT(self) -> None:
        self._drain_body()
        self._send_not_found()

    def do_DELETE(self) -> None:
        self._drain_body()
        self._send_not_found()

    def do_PATCH(self) -> None:
        self._drain_body()
        self._send_not_found()

    # -- helpers ---------------------------------------------------------------------------

    def _fake(self) -> FakeOpenAIServer:
        server = self.server
        assert isinstance(server, _HTTPServer)
        return server.fake

    def _route(self) -> str:
        path = self.path.split("?", 1)[0]
        return path.rstrip("/") or "/"

    def _drain_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send_json(
        self, status: int, payload: object, extra_headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra_headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(self, error: Error) -> None:
        if error.body is not None:
            self._send_json(error.status, error.body)
            return
        err_type, code = _error_type(error.status)
        headers: dict[str, str] = {}
        if error.retry_after is not None:
            seconds = error.retry_after
            headers["Retry-After"] = (
                str(int(seconds)) if float(seconds).is_integer() else str(seconds)
            )
        payload = {
            "error": {"message": error.message, "type": err_type, "param": None, "code": code}
        }
        self._send_json(error.status, payload, headers)

    def _send_not_found(self) -> None:
        self._send_error(Error(404, f"fake server: unknown endpoint {self.command} {self.path}"))

    def _send_stream(
        self, fake: FakeOpenAIServer, reply: Reply, body: dict[str, Any], body_len: int
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in fake._stream_events(reply, body, body_len):
            if event is BREAK:  # fail mid-reply: drop the connection, body unfinished
                self.close_connection = True
                return
            data = f"data: {event}\n\n".encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class FakeOpenAIServer:
    """An OpenAI-compatible chat-completions server on ``127.0.0.1:<random port>``.

    Use as a context manager, or call :meth:`start` / :meth:`stop`. Everything a test reads
    (:attr:`requests`, :attr:`request_headers`) is appended under a lock, in arrival order;
    header names in :attr:`request_headers` are lower-cased.
    """

    def __init__(
        self,
        *,
        default_reply: Reply | Error | ReplyFunc | None = None,
        strict: bool = False,
        stream_usage: bool = True,
        reject_stream_options: bool = False,
        broken_tool_streams: bool | str = False,
        models: Sequence[str] = (FAKE_MODEL_ID,),
        props: Mapping[str, object] | None = None,
        show: Mapping[str, object] | None = None,
        context_window: int | None = 131_072,
        context_error: str = "llama-cpp-python",
        tokenizer: str | None = None,
    ) -> None:
        self.default_reply: Reply | Error | ReplyFunc | None = default_reply
        self.strict = strict
        self.stream_usage = stream_usage
        self.reject_stream_options = reject_stream_options
        self.broken_tool_streams = broken_tool_streams
        self.models = list(models)
        self.props = props
        self.show = show
        self.context_window = context_window
        self.context_error = context_error
        self.tokenizer = tokenizer
        self.other_requests: list[tuple[str, str, object]] = []  # (method, path, JSON body)
        self.refused: list[Error] = []  # what _refusal answered, in order
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self._queue: deque[ScriptEntry] = deque()
        self._marked: dict[str, deque[ScriptEntry]] = {}  # marker -> its own script
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("FakeOpenAIServer already started")
        self._stopping.clear()
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-openai-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes any handler stuck in a :class:`Hang`. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------

    def script(self, *entries: ScriptEntry) -> None:
        """Queue replies; each chat-completions request consumes the oldest one."""
        with self._cond:
            self._queue.extend(entries)

    def script_for(self, marker: str, *entries: ScriptEntry) -> None:
        """Queue replies for the requests whose system prompt or first user message contains
        ``marker`` (a role of team mode, a step id); those requests take from this script
        first, then from the common one. The marker scripted first that matches wins."""
        with self._cond:
            self._marked.setdefault(marker, deque()).extend(entries)

    def remaining_for(self, marker: str) -> int:
        with self._cond:
            return len(self._marked.get(marker, ()))

    @property
    def remaining(self) -> int:
        """How many script entries have not been consumed yet."""
        with self._cond:
            return len(self._queue)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until at least ``n`` chat requests arrived; return a copy of them.

        Raises :class:`TimeoutError` if they do not arrive within ``timeout`` seconds.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout=timeout):
                raise TimeoutError(
                    f"fake server: expected {n} request(s) within {timeout}s, "
                    f"got {len(self.requests)}"
                )
            return list(self.requests)

    # -- internals used by the handler -------------------------------------------------------

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._cond:
            self.requests.append(body)
            self.request_headers.append(headers)
            self._cond.notify_all()

    def _record_other(self, method: str, path: str, raw: bytes | None) -> None:
        try:
            data: object = json.loads(raw) if raw else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            data = raw
        with self._cond:
            self.other_requests.append((method, path, data))

    def _tokenized(self, route: str, raw: bytes) -> dict[str, object] | None:
        """The answer of the tokenizer endpoint at `route`, if this fake has that one."""
        where = {"llama.cpp": "/tokenize", "llama-cpp-python": "/extras/tokenize/count"}
        if self.tokenizer is None or route != where.get(self.tokenizer):
            return None
        self._record_other("POST", route, raw)
        body = json.loads(raw)
        text = str(body.get("content" if self.tokenizer == "llama.cpp" else "input", ""))
        count = len(text) // CHARS_PER_TOKEN
        return {"tokens": list(range(count))} if self.tokenizer == "llama.cpp" else {"count": count}

    def _overflow(self, body: dict[str, Any]) -> Error | None:
        """The context-length error of a request that does not fit ``context_window``."""
        window, prompt = self.context_window, prompt_tokens(body)
        if window is None or prompt < window:
            return None
        if self.context_error == "llama.cpp":
            message = "the request exceeds the available context size, try increasing it"
            error = {
                "code": 400,
                "message": message,
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": window,
            }
            return Error(400, message, body={"error": error})
        cap = body.get("max_tokens")
        completion = cap if isinstance(cap, int) else 0
        return Error(
            400,
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{prompt + completion} tokens ({prompt} in the messages, {completion} in the "
            "completion). Please reduce the length of the messages or completion.",
        )

    def _refusal(self, body: dict[str, Any]) -> Error | None:
        """The error a strict or old server answers this request with, if any (no script
        entry is consumed)."""
        error: Error | None = self._overflow(body)
        if error is not None:
            pass
        elif self.reject_stream_options and "stream_options" in body:
            error = Error(400, "fake server: unrecognized request argument: stream_options")
        elif self.strict:
            problem = _invalid_messages(body.get("messages"))
            if problem:
                error = Error(500, f"fake server: invalid messages: {problem}")
        if error is not None:
            with self._cond:
                self.refused.append(error)
        return error

    def _pop(self, body: dict[str, Any]) -> ScriptEntry | None:
        with self._cond:
            head = _head_text(body)
            for marker, queue in self._marked.items():
                if queue and marker in head:
                    return queue.popleft()
            if self._queue:
                return self._queue.popleft()
            return self.default_reply

    def _answer_for(self, body: dict[str, Any]) -> Reply | Error:
        while True:
            entry = self._pop(body)
            if entry is None:
                return Error(500, EXHAUSTED_MESSAGE)
            if isinstance(entry, Hang):
                if self._stopping.wait(entry.seconds):
                    return Error(503, "fake server: stopped while hanging")
                continue
            if isinstance(entry, Reply | Error):
                return entry
            try:
                result = entry(body)
            except Exception as exc:
                return Error(500, f"fake server: reply function raised {exc!r}")
            if isinstance(result, Reply | Error):  # pyright: ignore[reportUnnecessaryIsInstance]
                return result
            return Error(500, f"fake server: reply function returned {result!r}")

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    def _tool_ids(self, reply: Reply) -> list[str]:
        return [call.id or self._next_id("call_") for call in reply.tool_calls]

    @staticmethod
    def _usage(reply: Reply, body_len: int) -> dict[str, int]:
        if reply.usage is not None:
            prompt, completion = reply.usage
        else:
            prompt = body_len // 4
            out_len = len(reply.content or "") + sum(
                len(call.name) + len(call.arguments_text()) for call in reply.tool_calls
            )
            completion = max(1, out_len // 4)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _completion(self, reply: Reply, body: dict[str, Any], body_len: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text()},
                }
                for call, call_id in zip(reply.tool_calls, self._tool_ids(reply), strict=True)
            ]
        return {
            "id": self._next_id("chatcmpl-fake"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or FAKE_MODEL_ID),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": self._usage(reply, body_len),
        }

    def _stream_events(self, reply: Reply, body: dict[str, Any], body_len: int) -> Iterator[str]:
        """The ``data:`` payloads of a streamed answer, ``[DONE]`` last."""
        options = body.get("stream_options")
        include_usage = (
            self.stream_usage and isinstance(options, dict) and bool(options.get("include_usage"))
        )
        base: dict[str, Any] = {
            "id": self._next_id("chatcmpl-fake"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": str(body.get("model") or FAKE_MODEL_ID),
        }
        if include_usage:
            base["usage"] = None

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            return json.dumps({**base, "choices": [choice]})

        yield chunk({"role": "assistant", "content": "" if reply.content else None})
        if self.broken_tool_streams is True and reply.tool_calls:
            yield BREAK  # the server failed mid-reply: no finish, no [DONE]
            return
        if reply.content:
            for piece in _split(reply.content, min(3, len(reply.content))):
                yield chunk({"content": piece})
        for index, (call, call_id) in enumerate(
            zip(reply.tool_calls, self._tool_ids(reply), strict=True)
        ):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            args = call.arguments_text()
            for piece in _split(args, max(2, min(3, len(args)))):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, reply.finish_reason)
        if include_usage:
            yield json.dumps({**base, "choices": [], "usage": self._usage(reply, body_len)})
        yield "[DONE]"
