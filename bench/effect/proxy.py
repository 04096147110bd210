"""A counting proxy on 127.0.0.1 in front of the model server: every harness talks to the model
through it, so tokens and calls are counted the same way for all of them, from the server's side.

Each `/chat/completions` reply's `usage` is summed as the server reports it. A streamed reply
without usage (llama-cpp-python's server sends none in streams) is estimated and marked so: the
prompt as the server's own tokenizer counts the messages' text, the tool definitions and a few
tokens of chat template per message; the completion as it counts the streamed text and tool-call
arguments. Requests and replies pass through unchanged.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

TEMPLATE_TOKENS_PER_MESSAGE = 5  # <|im_start|>role\n … <|im_end|>\n
HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}
)


@dataclass
class Call:
    label: str
    path: str
    status: int
    stream: bool
    messages: int
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    seconds: float
    finish_reason: str = ""
    tool_calls: int = 0
    reply: str = ""  # the start of the reply's text (for reading a failure afterwards)
    # what was sent, to read a failure afterwards or replay a request by hand
    sent: list[dict[str, Any]] = field(default_factory=lambda: [])
    temperature: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for item in content:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(item, dict) and isinstance(item.get("text"), str):  # pyright: ignore[reportUnknownMemberType]
                parts.append(str(item["text"]))  # pyright: ignore[reportUnknownArgumentType]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(parts)


def prompt_text(body: dict[str, Any]) -> tuple[str, int]:
    """The text of a request's prompt that a tokenizer can count, and its message count."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    text = "\n".join(_text_of(m) for m in messages)  # pyright: ignore[reportUnknownArgumentType]
    if body.get("tools"):
        text += "\n" + json.dumps(body["tools"])
    return text, len(messages)


class StreamReader:
    """What a streamed (SSE) reply said: its text, tool-call arguments, usage if any."""

    def __init__(self) -> None:
        self.buffer = b""
        self.text: list[str] = []
        self.tool_calls: set[int] = set()
        self.usage: dict[str, Any] | None = None
        self.finish_reason = ""

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            return
        if not isinstance(chunk, dict):
            return
        event: dict[str, Any] = chunk  # pyright: ignore[reportUnknownVariableType]
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.text.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                self.tool_calls.add(int(call.get("index", 0)))
                function = call.get("function") or {}
                self.text.append(str(function.get("name") or ""))
                self.text.append(str(function.get("arguments") or ""))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])


class _QuietServer(ThreadingHTTPServer):
    """A client that closes its kept-alive connection as it exits (aider does) is no error."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # pyright: ignore[reportArgumentType]


class CountingProxy:
    """`start()` serves on 127.0.0.1 (a free port); `base_url` is what harnesses are given."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.upstream_prefix = parts.path.rstrip("/")  # e.g. /v1
        self.label = ""
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._open: dict[int, tuple[str, http.client.HTTPConnection]] = {}
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.upstream_prefix}"

    def start(self) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                proxy.forward(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                proxy.forward(self, self.rfile.read(length))

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def take(self) -> list[Call]:
        """The calls since the last take (the driver takes them after each run)."""
        with self._lock:
            calls, self.calls = self.calls, []
        return calls

    def wait_idle(self, timeout: float) -> bool:
        """Waits until no request is in flight (False: still one after `timeout` seconds).
        A harness killed at its time limit leaves its last request to the server, which goes
        on computing it: the next run must not start behind it."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def abort(self, label: str) -> int:
        """Cuts the requests of run `label` still in flight (the harness has ended: nobody
        reads their replies) at the server's side, so the next run does not wait behind them;
        what came back so far is counted. Returns how many were cut."""
        with self._lock:
            conns = [conn for owner, conn in self._open.values() if owner == label]
        for conn in conns:
            if conn.sock is not None:
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)
        return len(conns)

    def settle(self, model: str, timeout: float) -> bool:
        """Waits until the server is free: a one-token request of its own (not counted), which
        it answers after what it still computes (one request at a time) — a streamed one it
        breaks off for it (llama-cpp-python's `interrupt_requests`). False: no answer in
        `timeout` seconds."""
        body = json.dumps(
            {"model": model, "messages": [{"role": "user", "content": "1"}], "max_tokens": 1}
        ).encode()
        try:
            conn = http.client.HTTPConnection(
                self.upstream_host, self.upstream_port, timeout=timeout
            )
            conn.request(
                "POST",
                f"{self.upstream_prefix}/chat/completions",
                body,
                {"Content-Type": "application/json"},
            )
            conn.getresponse().read()
            conn.close()
        except (OSError, http.client.HTTPException):
            return False
        return True

    def count_tokens(self, text: str) -> int:
        """The server's own tokenizer's count of `text` (a quarter of its length if it fails)."""
        if not text:
            return 0
        try:
            conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
            body = json.dumps({"input": text}).encode()
            conn.request(
                "POST", "/extras/tokenize/count", body, {"Content-Type": "application/json"}
            )
            answer = json.loads(conn.getresponse().read())
            conn.close()
            return int(answer["count"])
        except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
            return max(1, len(text) // 4)

    def forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        with self._lock:
            self._in_flight += 1
        try:
            self._forward(handler, body)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        started = time.monotonic()
        label = self.label
        headers = {
            k: v
            for k, v in handler.headers.items()
            if k.lower() not in HOP_HEADERS and k.lower() != "host"
        }
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=3600)
        chat = handler.path.rstrip("/").endswith("/chat/completions") and handler.command == "POST"
        with self._lock:
            self._open[id(conn)] = (label, conn)
        try:
            self._relay(handler, conn, body, headers, chat, label, started)
        finally:
            with self._lock:
                self._open.pop(id(conn), None)
            conn.close()

    def _relay(
        self,
        handler: BaseHTTPRequestHandler,
        conn: http.client.HTTPConnection,
        body: bytes,
        headers: dict[str, str],
        chat: bool,
        label: str,
        started: float,
    ) -> None:
        try:
            conn.request(handler.command, handler.path, body, headers)
            upstream = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            with contextlib.suppress(OSError):  # the harness may be gone as well
                handler.send_error(502, f"upstream: {exc}")
            if chat:  # cut before the first byte (`abort`): the prompt was still sent
                self._record(label, handler.path, 499, body, True, StreamReader(), b"", started)
            return
        handler.send_response(upstream.status)
        for key, value in upstream.getheaders():
            if key.lower() not in HOP_HEADERS:
                handler.send_header(key, value)
        streamed = "text/event-stream" in (upstream.getheader("Content-Type") or "")
        reader = StreamReader()
        whole = b""
        try:
            if streamed:
                handler.send_header("Transfer-Encoding", "chunked")
                handler.end_headers()
                while chunk := upstream.read1(65536):
                    reader.feed(chunk)
                    handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
            else:
                whole = upstream.read()
                handler.send_header("Content-Length", str(len(whole)))
                handler.end_headers()
                handler.wfile.write(whole)
            handler.wfile.flush()
        except OSError:
            pass  # the harness hung up (a timeout, a cancel): the call is still counted
        except http.client.HTTPException:
            handler.close_connection = True  # the server broke off (it died): so does the reply
        if chat:
            self._record(
                label, handler.path, upstream.status, body, streamed, reader, whole, started
            )

    def _record(
        self,
        label: str,
        path: str,
        status: int,
        body: bytes,
        streamed: bool,
        reader: StreamReader,
        whole: bytes,
        started: float,
    ) -> None:
        try:
            request: dict[str, Any] = json.loads(body or b"{}")
        except ValueError:
            request = {}
        text, messages = prompt_text(request)
        usage: dict[str, Any] | None = None
        finish, tool_calls, reply = "", 0, ""
        if streamed:
            usage = reader.usage
            finish, tool_calls, reply = (
                reader.finish_reason,
                len(reader.tool_calls),
                "".join(reader.text),
            )
        else:
            try:
                answer = json.loads(whole)
                usage = answer.get("usage")
                choice = (answer.get("choices") or [{}])[0]
                message = choice.get("message") or {}
                finish = str(choice.get("finish_reason") or "")
                tool_calls = len(message.get("tool_calls") or [])
                reply = _text_of(message)
            except (ValueError, AttributeError, IndexError, TypeError):
                usage = None
        if usage and "prompt_tokens" in usage:
            prompt, completion, estimated = (
                int(usage["prompt_tokens"]),
                int(usage.get("completion_tokens") or 0),
                False,
            )
        else:
            prompt = self.count_tokens(text) + TEMPLATE_TOKENS_PER_MESSAGE * messages
            completion = self.count_tokens(reply)
            estimated = True
        call = Call(
            label=label,
            path=path,
            status=status,
            stream=streamed,
            messages=messages,
            prompt_tokens=prompt,
            completion_tokens=completion,
            estimated=estimated,
            seconds=round(time.monotonic() - started, 2),
            finish_reason=finish,
            tool_calls=tool_calls,
            reply=reply[:4000],
            sent=[m for m in request.get("messages") or [] if isinstance(m, dict)],
            temperature=request.get("temperature"),
        )
        with self._lock:
            self.calls.append(call)
