"""The fake OpenAI server speaks the protocol the real ``openai`` client expects."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

from tests.fakes.openai_server import Error, FakeOpenAIServer, Hang, Reply, ToolCall

MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the bug in a.py"},
]
TOOLS: list[ChatCompletionFunctionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def client_for(srv: FakeOpenAIServer, **kwargs: Any) -> AsyncOpenAI:
    kwargs.setdefault("max_retries", 0)
    return AsyncOpenAI(api_key="test-key", base_url=srv.base_url, **kwargs)


def http(
    method: str, url: str, data: bytes | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    req = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read()), dict(exc.headers)


async def test_plain_reply(srv: FakeOpenAIServer) -> None:
    srv.script(Reply("Hello from the fake."))
    async with client_for(srv) as client:
        resp = await client.chat.completions.create(model="fake-model", messages=MESSAGES)
    choice = resp.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "Hello from the fake."
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert resp.object == "chat.completion"
    assert resp.model == "fake-model"
    assert resp.usage is not None
    assert resp.usage.prompt_tokens > 0
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    assert srv.remaining == 0


def test_sync_client_and_explicit_usage(srv: FakeOpenAIServer) -> None:
    srv.script(Reply("ok", usage=(123, 7)))
    with OpenAI(api_key="test-key", base_url=srv.base_url, max_retries=0) as client:
        resp = client.chat.completions.create(model="m", messages=MESSAGES)
    assert resp.choices[0].message.content == "ok"
    assert resp.usage is not None
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (123, 7)
    assert resp.usage.total_tokens == 130


async def test_two_tool_calls(srv: FakeOpenAIServer) -> None:
    srv.script(
        Reply(
            tool_calls=[
                ToolCall("read_file", {"path": "a.py"}),
                ToolCall("run_tests", {"args": ["-q", "tests"], "verbose": False}, id="call_x"),
            ]
        )
    )
    async with client_for(srv) as client:
        resp = await client.chat.completions.create(
            model="fake-model", messages=MESSAGES, tools=TOOLS
        )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None
    assert len(calls) == 2
    first, second = calls[0], calls[1]
    assert first.type == "function"
    assert second.type == "function"
    assert first.function.name == "read_file"
    assert json.loads(first.function.arguments) == {"path": "a.py"}
    assert first.id.startswith("call_")
    assert second.function.name == "run_tests"
    assert json.loads(second.function.arguments) == {"args": ["-q", "tests"], "verbose": False}
    assert second.id == "call_x"
    assert first.id != second.id


async def test_streaming_content_and_tool_calls(srv: FakeOpenAIServer) -> None:
    args = {"path": "src/module.py", "content": "print('hi')\n" * 3}
    srv.script(
        Reply(
            "Let me look at the file first.",
            tool_calls=[ToolCall("read_file", args), ToolCall("noop", "{}")],
        )
    )
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    arg_pieces: dict[int, int] = {}
    roles: list[str] = []
    finish: list[str] = []
    chunks = 0
    async with client_for(srv) as client:
        stream = await client.chat.completions.create(
            model="fake-model", messages=MESSAGES, tools=TOOLS, stream=True
        )
        async with stream:
            async for chunk in stream:
                chunks += 1
                assert chunk.object == "chat.completion.chunk"
                assert chunk.usage is None
                choice = chunk.choices[0]
                if choice.finish_reason is not None:
                    finish.append(choice.finish_reason)
                delta = choice.delta
                if delta.role:
                    roles.append(delta.role)
                if delta.content:
                    content.append(delta.content)
                for tc in delta.tool_calls or []:
                    entry = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                    if tc.id:
                        entry["id"] = tc.id
                    if tc.function and tc.function.name:
                        entry["name"] += tc.function.name
                    if tc.function and tc.function.arguments:
                        entry["arguments"] += tc.function.arguments
                        arg_pieces[tc.index] = arg_pieces.get(tc.index, 0) + 1
    assert roles == ["assistant"]
    assert "".join(content) == "Let me look at the file first."
    assert len(content) >= 2
    assert finish == ["tool_calls"]
    assert sorted(calls) == [0, 1]
    assert calls[0]["name"] == "read_file"
    assert calls[0]["arguments"] == json.dumps(args)
    assert arg_pieces[0] >= 2
    assert calls[1]["name"] == "noop"
    assert calls[1]["arguments"] == "{}"
    assert arg_pieces[1] >= 2
    assert calls[0]["id"] and calls[1]["id"] and calls[0]["id"] != calls[1]["id"]
    assert chunks > 5


async def test_streaming_include_usage(srv: FakeOpenAIServer) -> None:
    srv.script(Reply("done", usage=(40, 2)), Reply("again"))
    async with client_for(srv) as client:
        stream = await client.chat.completions.create(
            model="fake-model",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
        # Without include_usage there is no usage chunk.
        plain = await client.chat.completions.create(
            model="fake-model", messages=MESSAGES, stream=True
        )
        plain_chunks = [chunk async for chunk in plain]
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (40, 2)
    assert all(c.usage is None for c in chunks[:-1])
    assert "".join(c.choices[0].delta.content or "" for c in chunks[:-1]) == "done"
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert all(c.choices for c in plain_chunks)
    assert plain_chunks[-1].choices[0].finish_reason == "stop"


def test_streaming_wire_format(srv: FakeOpenAIServer) -> None:
    srv.script(Reply("hi"))
    body = json.dumps({"model": "m", "messages": MESSAGES, "stream": True}).encode()
    req = urllib.request.Request(
        srv.base_url + "/chat/completions",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        text = resp.read().decode()
    events = [e for e in text.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    first = json.loads(events[0].removeprefix("data: "))
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert first["choices"][0]["finish_reason"] is None


async def test_error_500(srv: FakeOpenAIServer) -> None:
    srv.script(Error(500, "boom"))
    async with client_for(srv) as client:
        with pytest.raises(openai.InternalServerError) as info:
            await client.chat.completions.create(model="fake-model", messages=MESSAGES)
    assert info.value.status_code == 500
    assert "boom" in str(info.value)


async def test_error_during_stream_request(srv: FakeOpenAIServer) -> None:
    srv.script(Error(400, "bad request"))
    async with client_for(srv) as client:
        with pytest.raises(openai.BadRequestError, match="bad request"):
            await client.chat.completions.create(model="fake-model", messages=MESSAGES, stream=True)


async def test_rate_limit_then_retry_succeeds(srv: FakeOpenAIServer) -> None:
    srv.script(Error(429, "slow down", retry_after=0), Reply("recovered"))
    async with client_for(srv, max_retries=1) as client:
        resp = await client.chat.completions.create(model="fake-model", messages=MESSAGES)
    assert resp.choices[0].message.content == "recovered"
    assert len(srv.requests) == 2
    assert srv.requests[0] == srv.requests[1]


def test_error_body_and_retry_after_header(srv: FakeOpenAIServer) -> None:
    srv.script(Error(429, "slow down", retry_after=1.5))
    body = json.dumps({"model": "m", "messages": MESSAGES}).encode()
    status, payload, headers = http("POST", srv.base_url + "/chat/completions", body)
    assert status == 429
    assert payload["error"]["message"] == "slow down"
    assert payload["error"]["type"] == "rate_limit_error"
    assert "code" in payload["error"]
    assert headers["Retry-After"] == "1.5"


async def test_hang_longer_than_timeout(srv: FakeOpenAIServer) -> None:
    srv.script(Hang(30), Reply("too late"))
    started = time.monotonic()
    async with client_for(srv, timeout=0.3) as client:
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="fake-model", messages=MESSAGES)
    assert time.monotonic() - started < 5
    # stop() (fixture teardown) wakes the hanging handler instead of waiting 30 s.


def test_stop_does_not_wait_for_hang() -> None:
    srv = FakeOpenAIServer().start()
    srv.script(Hang(60))
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    with sock:
        body = json.dumps({"model": "m", "messages": MESSAGES}).encode()
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        srv.wait_for_requests(1, timeout=5)
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 3
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 503")


async def test_hang_then_next_entry(srv: FakeOpenAIServer) -> None:
    srv.script(Hang(0.2), Reply("after the wait"))
    async with client_for(srv, timeout=5) as client:
        resp = await client.chat.completions.create(model="fake-model", messages=MESSAGES)
    assert resp.choices[0].message.content == "after the wait"


async def test_exhausted_script(srv: FakeOpenAIServer) -> None:
    srv.script(Reply("only one"))
    async with client_for(srv) as client:
        await client.chat.completions.create(model="fake-model", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            await client.chat.completions.create(model="fake-model", messages=MESSAGES)


async def test_default_reply_when_queue_empty(srv: FakeOpenAIServer) -> None:
    srv.default_reply = Reply("default")
    srv.script(Reply("scripted"))
    async with client_for(srv) as client:
        texts = [
            (await client.chat.completions.create(model="m", messages=MESSAGES))
            .choices[0]
            .message.content
            for _ in range(3)
        ]
    assert texts == ["scripted", "default", "default"]


async def test_broken_json_arguments_verbatim(srv: FakeOpenAIServer) -> None:
    broken = '{"path": "a.py", "content": "unterminated'
    srv.script(
        Reply(tool_calls=[ToolCall("write_file", broken)]),
        Reply(tool_calls=[ToolCall("write_file", broken)]),
    )
    async with client_for(srv) as client:
        resp = await client.chat.completions.create(
            model="fake-model", messages=MESSAGES, tools=TOOLS
        )
        stream = await client.chat.completions.create(
            model="fake-model", messages=MESSAGES, tools=TOOLS, stream=True
        )
        streamed = ""
        async for chunk in stream:
            if not chunk.choices:
                continue
            for tc in chunk.choices[0].delta.tool_calls or []:
                if tc.function and tc.function.arguments:
                    streamed += tc.function.arguments
    calls = resp.choices[0].message.tool_calls
    assert calls is not None
    assert calls[0].type == "function"
    assert calls[0].function.arguments == broken
    assert streamed == broken
    with pytest.raises(json.JSONDecodeError):
        json.loads(calls[0].function.arguments)


async def test_callable_reply_sees_request(srv: FakeOpenAIServer) -> None:
    def echo_last_user(body: dict[str, Any]) -> Reply | Error:
        last = body["messages"][-1]["content"]
        return Reply(f"you said: {last}")

    def fail(body: dict[str, Any]) -> Reply | Error:
        return Error(503, "overloaded")

    srv.script(echo_last_user, fail)
    async with client_for(srv) as client:
        resp = await client.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError, match="overloaded"):
            await client.chat.completions.create(model="m", messages=MESSAGES)
    assert resp.choices[0].message.content == "you said: Fix the bug in a.py"


async def test_requests_and_headers_recorded(srv: FakeOpenAIServer) -> None:
    srv.script(Reply("one"), Reply("two"))
    async with client_for(srv) as client:
        await client.chat.completions.create(
            model="fake-model", messages=MESSAGES, tools=TOOLS, temperature=0
        )
        await client.chat.completions.create(
            model="other-model", messages=[*MESSAGES, {"role": "assistant", "content": "one"}]
        )
    requests = srv.wait_for_requests(2, timeout=1)
    assert len(requests) == 2
    assert requests[0]["model"] == "fake-model"
    assert requests[0]["messages"] == MESSAGES
    assert requests[0]["tools"] == TOOLS
    assert requests[0]["temperature"] == 0
    assert requests[1]["model"] == "other-model"
    assert requests[1]["messages"][-1] == {"role": "assistant", "content": "one"}
    assert "tools" not in requests[1]
    assert len(srv.request_headers) == 2
    assert all(h["authorization"] == "Bearer test-key" for h in srv.request_headers)
    with pytest.raises(TimeoutError):
        srv.wait_for_requests(3, timeout=0.05)


async def test_models_endpoint(srv: FakeOpenAIServer) -> None:
    async with client_for(srv) as client:
        models = await client.models.list()
        ids = [m.id async for m in models]
    assert ids == ["fake-model"]
    assert srv.requests == []


def test_unknown_path_and_malformed_json(srv: FakeOpenAIServer) -> None:
    status, payload, _ = http("GET", srv.base_url + "/nope")
    assert status == 404
    assert "error" in payload
    status, payload, _ = http("POST", srv.base_url + "/embeddings", b"{}")
    assert status == 404
    status, payload, _ = http("POST", srv.base_url + "/chat/completions", b"{not json")
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert srv.requests == []


def test_restart_port_and_idempotent_stop() -> None:
    srv = FakeOpenAIServer()
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    with srv:
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
        with pytest.raises(RuntimeError):
            srv.start()
    srv.stop()


# -- the faults of real servers ------------------------------------------------------------


async def test_max_tokens_cuts_a_rambling_reply_with_finish_reason_length() -> None:
    from tests.fakes.openai_server import ramble

    with FakeOpenAIServer(default_reply=Reply(ramble())) as srv:
        async with client_for(srv) as client:
            resp = await client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=10)
            stream = await client.chat.completions.create(
                model="m", messages=MESSAGES, max_tokens=10, stream=True
            )
            chunks = [chunk async for chunk in stream]
            whole = await client.chat.completions.create(model="m", messages=MESSAGES)
    assert resp.choices[0].finish_reason == "length"
    assert len(resp.choices[0].message.content or "") == 40
    assert chunks[-1].choices[0].finish_reason == "length"
    assert len("".join(c.choices[0].delta.content or "" for c in chunks)) == 40
    assert whole.choices[0].finish_reason == "stop"
    assert len(whole.choices[0].message.content or "") > 10_000


async def test_a_server_without_stream_usage_ignores_stream_options() -> None:
    with FakeOpenAIServer(default_reply=Reply("hi"), stream_usage=False) as srv:
        async with client_for(srv) as client:
            stream = await client.chat.completions.create(
                model="m",
                messages=MESSAGES,
                stream=True,
                stream_options={"include_usage": True},
            )
            chunks = [chunk async for chunk in stream]
    assert all(c.usage is None for c in chunks) and all(c.choices for c in chunks)


async def test_a_server_refusing_stream_options_answers_400() -> None:
    with FakeOpenAIServer(default_reply=Reply("hi"), reject_stream_options=True) as srv:
        async with client_for(srv) as client:
            with pytest.raises(openai.BadRequestError, match="stream_options"):
                await client.chat.completions.create(
                    model="m",
                    messages=MESSAGES,
                    stream=True,
                    stream_options={"include_usage": True},
                )
            plain = await client.chat.completions.create(model="m", messages=MESSAGES)
    assert plain.choices[0].message.content == "hi"
    assert len(srv.refused) == 1 and srv.remaining == 0


async def test_a_strict_server_refuses_content_null() -> None:
    bad: list[ChatCompletionMessageParam] = [
        *MESSAGES,
        {"role": "assistant", "content": None},
        {"role": "user", "content": "go on"},
    ]
    with FakeOpenAIServer(default_reply=Reply("hi"), strict=True) as srv:
        async with client_for(srv) as client:
            with pytest.raises(openai.InternalServerError, match="content null"):
                await client.chat.completions.create(model="m", messages=bad)
            with_calls: list[ChatCompletionMessageParam] = [
                *MESSAGES,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ]
            with pytest.raises(openai.InternalServerError, match="must be a string"):
                await client.chat.completions.create(model="m", messages=with_calls)
            empty: list[ChatCompletionMessageParam] = [
                *MESSAGES,
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            ]
            again = await client.chat.completions.create(model="m", messages=empty)
    assert again.choices[0].message.content == "hi"


async def test_models_lists_the_names_given() -> None:
    with FakeOpenAIServer(models=["a", "b"]) as srv:
        async with client_for(srv) as client:
            names = [m.id async for m in await client.models.list()]
    assert names == ["a", "b"]
