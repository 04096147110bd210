"""What a real model server does to the loop — the real openai client against the fake server
behaving like one (no usage in streams, strict message validation, replies that never call a
tool, rambling cut at max_tokens), real tools, real pytest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.messages import TaskStatus
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import Error, FakeOpenAIServer, Reply, ToolCall, ramble
from tests.scripts import SUMMARY, fix_average_script
from tests.test_agent import FIX_TASK, make_session

STOPPED = "I am sorry, I cannot help with that."


def settings(server: FakeOpenAIServer, **model: object) -> dict[str, object]:
    return {
        "baseUrl": server.base_url,
        "name": "fake-model",
        "apiKey": "k",
        "maxRetries": 0,
        "timeout": 20,
        **model,
    }


def log_entries(project: Path, kind: str) -> list[dict[str, Any]]:
    logs = sorted((project / ".agent-lsp" / "logs").glob("*.jsonl"))
    assert logs, "no session log"
    entries = [json.loads(line) for path in logs for line in path.read_text().splitlines()]
    return [e for e in entries if e["kind"] == kind]


@pytest.fixture
def strict_server() -> Iterator[FakeOpenAIServer]:
    """Like llama.cpp's server: strict message validation, no usage in streams."""
    with FakeOpenAIServer(strict=True, stream_usage=False) as server:
        yield server


async def test_a_model_that_stops_is_nudged_once_then_its_words_are_the_outcome(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default_reply = Reply(STOPPED)
    session = make_session(project, fake_openai.base_url)  # maxSteps 25
    channel = RecordingChannel()
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.FAILED
    assert outcome.stop_reason == "model stopped"
    assert outcome.summary == f"stopped: the model did not continue: {STOPPED}"
    assert outcome.steps == 2
    requests = fake_openai.requests
    assert len(requests) == 2  # one nudge, not 24
    nudge = requests[1]["messages"][-1]
    assert nudge["role"] == "user" and "the test suite does not pass" in nudge["content"]
    assert "FAILED tests/test_calc.py::test_average" in nudge["content"]
    assert "If you answer in words only again, the task stops here." in nudge["content"]
    assert outcome.summary in [e.message for e in channel.events]
    assert (project / "calc.py").read_text().count(FIX) == 0


async def test_after_real_work_a_second_stop_gets_its_own_nudge(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    read = Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})])
    fake_openai.script(Reply("Let me think."), read, Reply("Done."), *fix_average_script())
    session = make_session(
        project, fake_openai.base_url, model=settings(fake_openai, toolCalling="native")
    )
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED and outcome.summary == SUMMARY
    nudges = [
        r
        for r in fake_openai.requests
        if "tools" in r and "The task is not done" in r["messages"][-1]["content"]
    ]
    assert len(nudges) == 2  # each stop after real work gets its one nudge


async def test_a_strict_server_never_gets_content_null_without_tool_calls(
    project: Path, strict_server: FakeOpenAIServer
) -> None:
    # An empty reply (no text, no tool call), then the fix: the empty turn goes back to the
    # server in the next request, which a strict server refuses if it is `content: null`.
    strict_server.script(Reply(None), *fix_average_script())
    session = make_session(project, strict_server.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()

    assert strict_server.refused == []
    assert outcome.status is TaskStatus.COMPLETED, outcome
    for request in strict_server.requests:
        for message in request["messages"]:
            assert isinstance(message["content"], str) or message.get("tool_calls")


async def test_every_call_is_capped_and_a_cut_reply_is_said(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default_reply = Reply(ramble())
    session = make_session(project, fake_openai.base_url, model=settings(fake_openai, maxTokens=64))
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()

    requests = fake_openai.requests
    assert [r["max_tokens"] for r in requests] == [64, 64]
    assert outcome.status is TaskStatus.FAILED
    assert outcome.summary.startswith(
        "stopped: the model did not continue (its reply was cut at the output cap, "
        "[model] maxTokens): and then step 0 of the plan,"
    )
    assert len(outcome.summary) < 400
    nudge = requests[1]["messages"][-1]["content"]
    assert nudge.startswith("Your reply was cut at the output cap: be brief")
    calls = log_entries(project, "model_call")
    assert [c["finish_reason"] for c in calls] == ["length", "length"]
    assert "the reply was cut at the output cap (64 tokens)" in calls[0]["notes"]
    assert len(calls[0]["reply"]) <= 64 * 4


def test_the_default_output_cap_is_sent() -> None:
    from agent_lsp.config.schema import Settings

    assert Settings.model_validate({}).model.max_tokens == 4096


async def test_tokens_are_estimated_never_zero_when_the_stream_has_no_usage(
    project: Path, strict_server: FakeOpenAIServer
) -> None:
    strict_server.script(*fix_average_script())
    session = make_session(project, strict_server.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED
    assert strict_server.requests[0]["stream_options"] == {"include_usage": True}
    usage = outcome.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.estimated is True and usage.calls == 4
    calls = log_entries(project, "model_call")
    assert all(c["completion_tokens"] > 0 and c["estimated"] for c in calls)
    end = log_entries(project, "task_end")[-1]
    assert end["completion_tokens"] == usage.completion_tokens


async def test_reported_usage_is_counted_as_reported(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        *(Reply(r.content, r.tool_calls, usage=(100, 7)) for r in fix_average_script())
    )
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (400, 28)
    assert (outcome.usage.calls, outcome.usage.estimated) == (4, False)


async def test_an_endpoint_refusing_stream_options_is_asked_without_them(
    project: Path,
) -> None:
    with FakeOpenAIServer(reject_stream_options=True) as server:
        server.script(*fix_average_script())
        session = make_session(project, server.base_url)
        outcome = await session.run_task(FIX_TASK, RecordingChannel())
        await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED, outcome
    sent = [("stream_options" in r) for r in server.requests]
    assert sent == [True, False, False, False, False]  # refused once, then never sent
    assert len(server.refused) == 1
    assert outcome.usage.completion_tokens > 0 and outcome.usage.estimated
    notes = log_entries(project, "model_call")[0]["notes"]
    assert any("the endpoint refused stream_options (HTTP 400" in n for n in notes)


async def test_the_log_holds_the_models_words_and_every_retry(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        Error(429, "slow down", retry_after=0),
        Error(500, "overloaded", retry_after=0),
        *fix_average_script(),
    )
    session = make_session(project, fake_openai.base_url, model=settings(fake_openai, maxRetries=2))
    channel = RecordingChannel()
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED
    calls = log_entries(project, "model_call")
    assert calls[0]["notes"] == [
        "retry 1 of 2 after HTTP 429: slow down; waited 0.0 s",
        "retry 2 of 2 after HTTP 500: overloaded; waited 0.0 s",
    ]
    assert calls[-1]["reply"] == SUMMARY
    assert [c["tool_calls"] for c in calls[:3]] == [["read_file"], ["edit_file"], ["run_tests"]]
    messages = [e.message for e in channel.events]
    assert "model: retry 1 of 2 after HTTP 429: slow down; waited 0.0 s" in messages


async def test_a_reply_too_long_for_the_log_is_bounded(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    # 5,000 characters of words (not one unit over and over: a runaway loop is cut sooner)
    long = "".join(f"word{n:05d} " for n in range(500))
    assert len(long) == 5000
    fake_openai.script(Reply(long), Reply(long))
    session = make_session(project, fake_openai.base_url)
    await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    reply = log_entries(project, "model_call")[0]["reply"]
    assert reply.startswith(long[:2000]) and reply.endswith("[... 3000 more characters]")


async def test_a_retry_that_never_succeeds_says_how_often_it_tried(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default_reply = Error(503, "down for maintenance", retry_after=0)
    session = make_session(project, fake_openai.base_url, model=settings(fake_openai, maxRetries=2))
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.ERROR
    assert outcome.summary == (
        "model error: the model endpoint answered HTTP 503: down for maintenance (after 2 retries)"
    )
    assert len(fake_openai.requests) == 3


def block(name: str, **args: object) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(args)}}}</tool_call>'


async def test_auto_reads_the_calls_a_model_writes_in_text_and_stays_native(
    project: Path, strict_server: FakeOpenAIServer
) -> None:
    # A server that renders the tools with the model's own template but does not parse its
    # answer (llama-cpp-python without --chat_format): the blocks are the calls, run at once;
    # the tools stay native, so the template keeps rendering them and the calls in history.
    strict_server.script(
        Reply("I will read the file first.\n" + block("read_file", path="calc.py")),
        Reply(block("edit_file", path="calc.py", old_text=BUG, new_text=FIX)),
        Reply(block("run_tests")),
        Reply(SUMMARY),
    )
    session = make_session(project, strict_server.base_url)  # toolCalling = auto
    channel = RecordingChannel()
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome
    assert outcome.summary == SUMMARY
    requests = strict_server.requests
    assert all("tools" in r for r in requests)
    assert all("<tool_call>" not in r["messages"][0]["content"] for r in requests)
    note = "tool calls read from the reply's text (not parsed by the server): read_file"
    assert note in log_entries(project, "model_call")[0]["notes"]
    assert "I will read the file first." in [e.message for e in channel.events]
    assert (project / "calc.py").read_text().count(FIX) == 1


async def test_auto_switches_to_text_tools_after_an_answer_in_words_it_cannot_accept(
    project: Path, strict_server: FakeOpenAIServer
) -> None:
    strict_server.script(
        Reply("The bug is in average(): it divides by one too many."),
        Reply(block("edit_file", path="calc.py", old_text=BUG, new_text=FIX)),
        Reply(block("run_tests")),
        Reply(SUMMARY),
    )
    session = make_session(project, strict_server.base_url)  # toolCalling = auto
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome
    requests = strict_server.requests
    assert "tools" in requests[0] and all("tools" not in r for r in requests[1:4])
    system = requests[1]["messages"][0]["content"]
    assert "<tool_call>" in system and "- edit_file:" in system
    assert "the test suite does not pass" in requests[1]["messages"][-1]["content"]
    calls = log_entries(project, "model_call")
    assert calls[0]["notes"] == []
    assert calls[1]["notes"] == [
        "the model answered in words without a tool call although tools were offered: "
        "switched to text tools (toolCalling = auto)"
    ]


async def test_auto_keeps_native_tools_for_a_model_that_calls_them(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(*fix_average_script())
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    assert all("tools" in r for r in fake_openai.requests)


async def test_no_test_runner_means_the_result_is_unverified(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    (tmp_path / "notes.txt").write_text("nothing to test here\n")
    fake_openai.script(Reply("Done: I reviewed the notes."))
    session = make_session(tmp_path, fake_openai.base_url)
    outcome = await session.run_task(
        Task(kind=TaskKind.TASK, instruction="tidy the notes"), RecordingChannel()
    )
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    assert outcome.verified is False and outcome.stop_reason == "unverified"
    assert outcome.summary == (
        "unverified: no test runner found, so nothing checked the result; "
        "the model says: Done: I reviewed the notes."
    )


async def test_an_explanation_needs_no_test_run_and_switches_nothing(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(Reply("average() divides by n + 1."), *fix_average_script())
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(
        Task(kind=TaskKind.EXPLAIN, instruction="what does average do?", path="calc.py"),
        RecordingChannel(),
    )
    assert (outcome.status, outcome.verified) == (TaskStatus.COMPLETED, True)
    assert outcome.summary == "average() divides by n + 1."
    # An answer in words that ends a task is no sign of a model without tool calls.
    fixed = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert fixed.status is TaskStatus.COMPLETED
    assert all("tools" in r for r in fake_openai.requests[:5])


@pytest.mark.parametrize(
    ("where", "why"),
    [
        (True, "the connection dropped after 1 chunks"),
        ("start", "Connection error."),
    ],
)
async def test_a_stream_that_breaks_off_is_asked_again_whole(
    project: Path, where: bool | str, why: str
) -> None:
    with FakeOpenAIServer(broken_tool_streams=where, stream_usage=False) as server:
        # Each reply twice: the broken stream consumes one, the request without streaming the
        # other; after the first break tool replies are no longer streamed.
        first, *rest = fix_average_script()
        server.script(first, first, *rest)
        session = make_session(project, server.base_url)
        outcome = await session.run_task(FIX_TASK, RecordingChannel())
        await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED, outcome
    assert outcome.summary == SUMMARY
    assert [r.get("stream", False) for r in server.requests] == [True, False, False, False, False]
    notes = log_entries(project, "model_call")[0]["notes"]
    assert notes == [
        f"the stream broke off ({why}): asked again without streaming; replies with tools "
        "are no longer streamed (remembered for this endpoint)"
    ]
