"""The model layer against servers that behave like the local ones users run (llama-cpp-python,
llama.cpp's llama-server, Ollama): tool calls written in the model's own format in `content`,
HTML-escaped replies, the context window the server serves (and its 400 when a request does
not fit), no streaming with tools, no usage in streams. The real `openai` client against the
fake server."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.config.schema import ModelSettings
from agent_lsp.errors import ContextWindowError
from agent_lsp.loop.agent import Agent
from agent_lsp.memory import logs
from agent_lsp.messages import ChatMessage, ModelReply, TaskStatus, ToolSpec
from agent_lsp.models import server_facts
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.models.text_tools import TextToolModel
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, prompt_tokens
from tests.scripts import SUMMARY
from tests.test_agent import FIX_TASK, make_session

EDIT = ToolSpec(
    name="edit_file",
    description="Replace text in a file.",
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_text": {"type": "string"},
            "new_text": {"type": "string"},
        },
        "required": ["path", "old_text", "new_text"],
    },
)
RUN = ToolSpec(
    name="run_tests",
    description="Run the tests.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
TOOLS = [EDIT, RUN]
ARGS = {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}
CALL = json.dumps({"name": "edit_file", "arguments": ARGS})
MESSAGES = [
    ChatMessage(role="system", content="You fix code."),
    ChatMessage(role="user", content="Fix a.py."),
]
SYNTAX = (
    'Write each tool call as <tool_call>{"name": "<tool name>", "arguments": '
    "{<arguments as JSON>}}</tool_call>, with the tool's required arguments."
)


def model_for(server: FakeOpenAIServer, **overrides: Any) -> OpenAICompatModel:
    settings = ModelSettings.model_validate(
        {
            "baseUrl": server.base_url,
            "name": "fake-model",
            "apiKey": "k",
            "maxRetries": 0,
            "timeout": 20,
            **overrides,
        }
    )
    return OpenAICompatModel(settings)


async def ask(server: FakeOpenAIServer, content: str, **overrides: Any) -> ModelReply:
    server.script(Reply(content))
    model = model_for(server, **overrides)
    try:
        return await model.complete(MESSAGES, TOOLS)
    finally:
        await model.aclose()


def calls(reply: ModelReply) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, json.loads(c.arguments)) for c in reply.tool_calls]


FORMS = {
    "qwen block": f"I will edit it.\n<tool_call>\n{CALL}\n</tool_call>",
    "block without its closing tag": f"I will edit it.\n<tool_call>{CALL}",
    "unclosed block, words after it": f"I will edit it.\n<tool_call>{CALL}\n\nThen run it.",
    "json fence": f"I will edit it.\n```json\n{CALL}\n```",
    "bare fence": f"I will edit it.\n```\n{CALL}\n```",
    "tool_call fence": f"I will edit it.\n```tool_call\n{CALL}\n```",
    "parameters": "I will edit it.\n" + json.dumps({"name": "edit_file", "parameters": ARGS}),
    "arguments as a string": "I will edit it. "
    + json.dumps({"name": "edit_file", "arguments": json.dumps(ARGS)}),
    "call syntax": f"I will edit it. edit_file({json.dumps(ARGS)})",
    "functions prefix": f"I will edit it. functions.edit_file: {json.dumps(ARGS)}",
    "escaped block": "I will edit it.\n" + html.escape(f"<tool_call>{CALL}</tool_call>"),
    "escaped fence": "I will edit it.\n```json\n" + CALL.replace('"', "&#34;") + "\n```",
}


PROSE = {"unclosed block, words after it": "I will edit it.\n\nThen run it."}


@pytest.mark.parametrize("form", FORMS)
async def test_a_call_in_the_models_own_format_is_a_tool_call(
    fake_openai: FakeOpenAIServer, form: str
) -> None:
    reply = await ask(fake_openai, FORMS[form], stream=False)
    assert calls(reply) == [("edit_file", ARGS)]
    assert reply.content == PROSE.get(form, "I will edit it.")
    assert reply.format_error is None
    assert "tool calls read from the reply's text (not parsed by the server): edit_file" in (
        reply.notes
    )
    # The native path keeps the calls native: the next request carries them as tool calls.
    assert "tools" in fake_openai.requests[0]


async def test_several_calls_and_the_bare_functions_form(fake_openai: FakeOpenAIServer) -> None:
    two = f"<tool_call>{CALL}</tool_call>\n<tool_call>" + '{"name": "run_tests", "arguments": {}}'
    reply = await ask(fake_openai, two)
    assert calls(reply) == [("edit_file", ARGS), ("run_tests", {})]
    assert reply.content is None
    assert len({c.id for c in reply.tool_calls}) == 2
    reply = await ask(fake_openai, "functions.run_tests:")  # chatml-function-calling's first reply
    assert calls(reply) == [("run_tests", {})]


async def test_json_that_is_not_a_call_stays_words(fake_openai: FakeOpenAIServer) -> None:
    text = 'The package file says:\n```json\n{"name": "calc", "version": "1.0"}\n```'
    reply = await ask(fake_openai, text)
    assert reply.tool_calls == [] and reply.format_error is None
    assert reply.content == text


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            '<tool_call>{"name": "edit_file", "arguments": {"path": "a.py",</tool_call>',
            "a <tool_call> block holds invalid JSON (Expecting property name enclosed in "
            "double quotes)",
        ),
        (
            '<tool_call>{"name": "delete_file", "arguments": {"path": "a.py"}}</tool_call>',
            "there is no tool 'delete_file' (the tools: edit_file, run_tests)",
        ),
        (
            '```json\n{"name": "edit_file", "arguments": {"path": "a.py"}}\n```',
            "edit_file needs the argument(s) old_text, new_text",
        ),
        (
            html.escape('<tool_call>{"name": "edit_file", "arguments": "{path"}</tool_call>'),
            "the arguments of edit_file are a string that is not JSON (Expecting property "
            "name enclosed in double quotes)",
        ),
    ],
)
async def test_a_malformed_call_is_reported_exactly(
    fake_openai: FakeOpenAIServer, content: str, problem: str
) -> None:
    reply = await ask(fake_openai, "Here goes.\n" + content)
    assert reply.tool_calls == []
    assert reply.format_error == f"{problem}. {SYNTAX}"
    assert reply.content == "Here goes."


async def test_the_text_protocol_reads_the_same_forms(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(
        Reply("```json\n" + CALL.replace('"', "&quot;") + "\n```"),
        Reply('<tool_call>{"name": "nope", "arguments": {}}</tool_call>'),
    )
    model = TextToolModel(model_for(fake_openai))
    first = await model.complete(MESSAGES, TOOLS)
    second = await model.complete(MESSAGES, TOOLS)
    await model.aclose()
    assert calls(first) == [("edit_file", ARGS)] and first.format_error is None
    assert "tools" not in fake_openai.requests[0]  # the text protocol: tools in the prompt
    assert second.tool_calls == []
    assert (
        second.format_error
        == f"there is no tool 'nope' (the tools: edit_file, run_tests). {SYNTAX}"
    )


async def test_a_fix_lands_when_the_model_writes_calls_its_own_way(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    # Qwen2.5-Coder under llama-cpp-python with the GGUF's own template: the calls come back
    # as text in content, in the template's blocks, a fence, or HTML-escaped.
    edit = {"name": "edit_file", "arguments": {"path": "calc.py", "old_text": BUG, "new_text": FIX}}
    fake_openai.script(
        Reply('<tool_call>\n{"name": "read_file", "arguments": {"path": "calc.py"}}\n</tool_call>'),
        Reply("The divisor is wrong.\n```json\n" + json.dumps(edit) + "\n```"),
        Reply(html.escape('<tool_call>{"name": "run_tests", "arguments": {}}</tool_call>')),
        Reply(SUMMARY),
    )
    session = make_session(project, fake_openai.base_url)  # toolCalling = auto
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED, outcome
    assert outcome.tool_runs == 3
    assert (project / "calc.py").read_text().count(FIX) == 1
    assert all("tools" in r for r in fake_openai.requests)
    replayed = fake_openai.requests[2]["messages"]
    assert [c["function"]["name"] for m in replayed for c in m.get("tool_calls", [])] == [
        "read_file",
        "edit_file",
    ]


# -- the context window the server serves ------------------------------------------------------


def remembered(state: Path) -> dict[str, Any]:
    return json.loads((state / "agent-lsp" / "servers.json").read_text())


async def window_of(server: FakeOpenAIServer, **overrides: Any) -> tuple[int | None, str]:
    model = model_for(server, **overrides)
    facts = await model.server_facts()
    await model.aclose()
    return facts.context_window, facts.window_from


async def test_llama_cpp_says_its_window_at_props(private_state: Path) -> None:
    props = {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}
    with FakeOpenAIServer(props=props) as server:
        assert await window_of(server) == (8192, "llama.cpp /props")
        assert remembered(private_state)[f"{server.base_url} fake-model"]["context_window"] == 8192
        # The setting wins, and the server is not even asked.
        asked = len(server.other_requests)
        assert await window_of(server, contextWindow=32000) == (32000, "setting")
        assert len(server.other_requests) == asked


async def test_ollama_says_its_window_at_api_show() -> None:
    info = {"general.architecture": "qwen2", "qwen2.context_length": 32768}
    show = {
        "model_info": info,
        "parameters": 'num_ctx                        16384\nstop "<|im_end|>"',
    }
    with FakeOpenAIServer(show=show) as server:
        assert await window_of(server) == (16384, "Ollama /api/show (num_ctx)")
        assert ("POST", "/api/show", {"model": "fake-model"}) in server.other_requests
    with FakeOpenAIServer(show={"model_info": info, "parameters": ""}) as server:
        window, source = await window_of(server)
        assert window == 4096
        assert (
            source == "Ollama's default num_ctx (the model allows 32768; set num_ctx to serve more)"
        )


async def test_a_server_that_says_nothing_leaves_the_window_unknown(
    fake_openai: FakeOpenAIServer,
) -> None:
    assert await window_of(fake_openai) == (None, "")
    model = model_for(fake_openai)
    assert model.context_window == 128_000
    await model.aclose()


async def test_llama_cpp_pythons_context_error_teaches_the_window(private_state: Path) -> None:
    # llama-cpp-python says its window nowhere but in the 400 of a request that does not fit.
    with FakeOpenAIServer(context_window=2048) as server:
        model = model_for(server)
        big = [*MESSAGES, ChatMessage(role="user", content="x " * 6000)]
        with pytest.raises(ContextWindowError) as raised:
            await model.complete(big, TOOLS)
        await model.aclose()
        asked = prompt_tokens(server.requests[0])
        assert str(raised.value) == (
            "the model endpoint answered HTTP 400: This model's maximum context length is 2048 "
            f"tokens. However, you requested {asked + 4096} tokens ({asked} in the messages, "
            "4096 in the completion). Please reduce the length of the messages or completion. "
            "— the server's context window is 2048 tokens: serve the model with a larger one "
            "(llama-cpp-python: --n_ctx 16384; llama-server: -c 16384; Ollama: num_ctx 16384)"
        )
        assert raised.value.window == 2048
        # The next run knows it without asking.
        again = model_for(server)
        assert again.facts.context_window == 2048
        assert again.facts.window_from == "learned from the server's context-length error"
        await again.aclose()
        entry = remembered(private_state)[f"{server.base_url} fake-model"]
        assert entry["context_window"] == 2048


async def test_a_request_longer_than_a_roomy_window_is_not_told_to_serve_a_smaller_one() -> None:
    """A window of 32k already: the advice is about the request (a prompt of a whole file
    pasted), not "--n_ctx 16384", which would make it smaller."""
    with FakeOpenAIServer(context_window=32_768) as server:
        model = model_for(server)
        big = [*MESSAGES, ChatMessage(role="user", content="z " * 70_000)]
        with pytest.raises(ContextWindowError) as raised:
            await model.complete(big, TOOLS)
        await model.aclose()
    said = str(raised.value)
    assert said.endswith(
        "— the server's context window is 32768 tokens: the request is longer than all of "
        "it: give a shorter task or less text"
    ), said
    assert "16384" not in said


async def test_llama_servers_context_error_names_n_ctx_in_its_body() -> None:
    with FakeOpenAIServer(context_window=3000, context_error="llama.cpp") as server:
        model = model_for(server)
        big = [*MESSAGES, ChatMessage(role="user", content="y " * 9000)]
        with pytest.raises(ContextWindowError) as raised:
            await model.complete(big, TOOLS)
        await model.aclose()
    assert raised.value.window == 3000
    assert "the request exceeds the available context size" in str(raised.value)
    assert "--n_ctx 16384" in str(raised.value)


async def test_a_session_compacts_at_the_window_the_server_serves(project: Path) -> None:
    props = {"default_generation_settings": {"n_ctx": 4000}}
    with FakeOpenAIServer(props=props) as server:
        server.default_reply = Reply(SUMMARY)
        session = make_session(project, server.base_url)
        agents: list[Agent] = []
        make_agent = session.make_agent

        def keep(*args: Any, **kwargs: Any) -> Agent:
            agents.append(make_agent(*args, **kwargs))
            return agents[-1]

        session.make_agent = keep
        await session.run_task(FIX_TASK, RecordingChannel())
        await session.aclose()
    assert [a.limits.context_window for a in agents] == [4000]


# -- streaming with tools, usage ---------------------------------------------------------------


async def test_a_server_that_cannot_stream_with_tools_is_not_asked_to_again() -> None:
    with FakeOpenAIServer(broken_tool_streams="request", stream_usage=False) as server:
        server.default_reply = Reply("ok")
        first = model_for(server)
        reply = await first.complete(MESSAGES, TOOLS)
        await first.aclose()
        assert [r.get("stream", False) for r in server.requests] == [True, False]
        assert reply.notes[0].endswith("(remembered for this endpoint)")
        # The next run (a new model on the same endpoint) pays nothing for it.
        second = model_for(server)
        await second.complete(MESSAGES, TOOLS)
        await second.complete(MESSAGES, [])  # without tools it still streams
        await second.aclose()
        assert [r.get("stream", False) for r in server.requests[2:]] == [False, True]


async def test_an_estimate_counts_the_tools_and_says_so() -> None:
    # llama-cpp-python's streams carry no usage: the prompt is estimated — the tools' schemas
    # included, which the template renders into the prompt (14 tools: most of a first request).
    with FakeOpenAIServer(stream_usage=False) as server:
        server.script(Reply("ok"), Reply("ok"))
        model = model_for(server)
        streamed = await model.complete(MESSAGES, TOOLS)
        whole = await model_for(server, stream=False).complete(MESSAGES, TOOLS)
        await model.aclose()
    schemas = len(json.dumps([t.to_openai() for t in TOOLS]))
    assert streamed.usage.estimated
    assert streamed.usage.prompt_tokens >= schemas // 3
    assert not whole.usage.estimated  # a whole reply carries the server's count


async def test_an_estimate_is_shown_as_one_in_the_log(project: Path) -> None:
    with FakeOpenAIServer(stream_usage=False) as server:  # llama-cpp-python: no usage in streams
        server.script(Reply(SUMMARY))
        session = make_session(project, server.base_url)
        await session.run_task(FIX_TASK, RecordingChannel())
        await session.aclose()
    rendered = [logs.render(line) for line in session.log_path.read_text().splitlines()]
    [line] = [x for x in rendered if " model: " in x]
    assert re.search(r" model: ~\d+ in / ~\d+ out tokens \(estimated\), ", line), line


async def test_the_output_cap_leaves_the_prompt_room_in_a_known_window() -> None:
    # vLLM refuses a request whose prompt and max_tokens together pass the window.
    props = {"default_generation_settings": {"n_ctx": 4096}}
    with FakeOpenAIServer(props=props, context_window=4096) as server:
        server.script(Reply("ok"), Reply("ok"))
        model = model_for(server, maxTokens=4096)
        await model.complete(MESSAGES, TOOLS)  # the window is not known yet: 4096 asked
        await model.server_facts()
        await model.complete(MESSAGES, TOOLS)
        await model.aclose()
    first, second = (r["max_tokens"] for r in server.requests)
    assert first == 4096
    assert 3000 < second < 4096 - prompt_tokens(server.requests[1])


async def test_a_window_learned_from_an_error_is_forgotten_when_the_server_grew(
    private_state: Path,
) -> None:
    with FakeOpenAIServer(context_window=2048) as server:
        model = model_for(server)
        big = [*MESSAGES, ChatMessage(role="user", content="x " * 6000)]
        with pytest.raises(ContextWindowError):
            await model.complete(big, TOOLS)
        await model.aclose()
        # The server is restarted with --n_ctx 16384: a counted request of more than 2048
        # tokens goes through, so the window learned is stale.
        server.context_window = 16384
        server.script(Reply("ok", usage=(3000, 5)))
        again = model_for(server, stream=False)
        assert again.facts.context_window == 2048
        await again.complete(big, TOOLS)
        await again.aclose()
        assert again.facts.context_window is None
        entry = remembered(private_state)[f"{server.base_url} fake-model"]
        assert entry["context_window"] is None


@pytest.mark.parametrize(
    ("base_url", "local"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://192.168.1.20:8080/v1", True),
        ("http://[::1]:8080/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://api.deepseek.com", False),
        ("http://8.8.8.8/v1", False),
    ],
)
def test_only_a_local_server_gets_the_oversized_window_probe(base_url: str, local: bool) -> None:
    assert server_facts.is_local(base_url) is local


LOOPED_FIX = "The mean divides by one too many.\n\ncalc.py\n```python\nx = 2\n```\n\n"


async def test_a_streamed_reply_that_loops_is_stopped_and_kept_up_to_the_loop(
    fake_openai: FakeOpenAIServer,
) -> None:
    """A small model's runaway (benchmark: a right fix, then "_ _ _ …" for 2,600 tokens until
    the run's 10 minutes were up): the stream is closed once its last 1,500 characters repeat
    one short unit, and the reply is what came before the loop, said so in the notes."""
    reply = await ask(fake_openai, LOOPED_FIX + "_ " * 6_000, stream=True)
    assert reply.content == LOOPED_FIX
    assert reply.finish_reason == "repetition" and not reply.cut
    (note,) = [n for n in reply.notes if "repeated" in n]
    assert f"from character {len(LOOPED_FIX)} it repeated '_ _ _ _" in note, note


@pytest.mark.parametrize(
    "content",
    [
        "\n".join(f"line {n}: {n * n}" for n in range(400)),  # long, never one unit
        "=" * 1_400 + "\nend",  # a long rule, shorter than the span looked at
        "row = [" + "0, " * 480 + "1]\n",  # a table of zeros, ending otherwise
    ],
    ids=["distinct-lines", "short-rule", "table"],
)
def test_what_is_not_a_runaway_loop(content: str) -> None:
    from agent_lsp.models.openai_compat import repeating_from

    assert repeating_from(content) is None
