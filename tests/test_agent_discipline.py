"""Loop discipline, budgets, compaction, retries and the text tool protocol — the real openai
client against the fake server, real tools, real pytest."""

from __future__ import annotations

import json
from pathlib import Path

from agent_lsp.messages import TaskStatus
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import Error, FakeOpenAIServer, Reply, ToolCall
from tests.scripts import SUMMARY, fix_average_script, tool_messages
from tests.test_agent import FIX_TASK, make_session


def model_settings(server: FakeOpenAIServer, retries: int = 0) -> dict[str, object]:
    return {"baseUrl": server.base_url, "apiKey": "k", "maxRetries": retries, "name": "m"}


def read(path: str = "calc.py") -> Reply:
    return Reply(tool_calls=[ToolCall("read_file", {"path": path})])


async def test_third_identical_failing_call_is_refused(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    bad = Reply(tool_calls=[ToolCall("read_file", {"path": "nope.py"})])
    fake_openai.script(bad, bad, bad, *fix_average_script())
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    results = tool_messages(fake_openai.requests[3])
    assert "nope.py: no such file" in results[0] and "nope.py: no such file" in results[1]
    assert "refused: this exact read_file call already failed 2 times" in results[2]


async def test_going_in_circles_pauses_the_task(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(read(), read("pyproject.toml"), read(), read(), read())
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.PAUSED and outcome.stop_reason == "loop"
    assert outcome.summary == (
        'paused: the last 5 steps repeated read_file:"calc.py" 4 times with no change'
    )
    assert len(fake_openai.requests) == 5


async def test_token_budget_stops_the_task(project: Path, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})], usage=(900, 200)),
        Reply(tool_calls=[ToolCall("list_files", {})], usage=(900, 200)),
    )
    session = make_session(project, fake_openai.base_url, maxTokens=2000)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert (outcome.status, outcome.stop_reason) == (TaskStatus.FAILED, "token budget")
    assert outcome.summary == "token budget (2200 of 2000 tokens) used up"
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (1800, 400)


async def test_a_request_that_would_pass_the_budget_is_not_sent(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The budget is checked with the next request's own size, before it is sent: a big tool
    result cannot take the task a whole call past its budget."""
    (project / "big.py").write_text("".join(f"X{i} = {'1' * 60}\n" for i in range(300)))
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "big.py"})], usage=(900, 200)),
        Reply("never asked", usage=(5000, 10)),
    )
    session = make_session(project, fake_openai.base_url, maxTokens=3000)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert (outcome.status, outcome.stop_reason) == (TaskStatus.FAILED, "token budget")
    assert outcome.summary.startswith("token budget (1100 of 3000 tokens used; the next request")
    assert len(fake_openai.requests) == 1
    assert (outcome.usage.prompt_tokens, outcome.usage.completion_tokens) == (900, 200)


async def test_compaction_masks_old_outputs_and_keeps_the_task(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    big = "\n".join(f"# filler line {i} " + "x" * 60 for i in range(400))
    (project / "notes.py").write_text(big + "\n")
    reads = [
        Reply(tool_calls=[ToolCall("read_file", {"path": p})])
        for p in (
            "notes.py",
            "pyproject.toml",
            "tests/test_calc.py",
            "calc.py",
            "pyproject.toml",
            "tests/test_calc.py",
            "calc.py",
            "pyproject.toml",
            "notes.py",
            "pyproject.toml",
        )
    ]
    fake_openai.script(*reads, *fix_average_script()[1:])
    session = make_session(
        project,
        fake_openai.base_url,
        model={
            "contextWindow": 9000,
            "profile": "full",  # the harness whose compaction this tests
            "baseUrl": fake_openai.base_url,
            "apiKey": "k",
            "maxRetries": 0,
            "name": "m",
        },
        compaction={"summarise": False},  # masking only (the last 10 turns stay whole)
    )
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    last = fake_openai.requests[-1]["messages"]
    assert last[0]["role"] == "system"
    assert "Fix this problem in calc.py at line 10" in last[1]["content"]  # the task, whole
    assert "is a test:" not in last[1]["content"]  # calc.py is the code, not a test
    masked = [m for m in last if m["role"] == "tool" and m["content"].startswith("[compacted")]
    assert masked and "output of read_file omitted" in masked[0]["content"]
    # notes.py was read twice: the old copy is masked, the recent one is whole.
    assert json.dumps(last).count("filler line 399") == 1
    assert "2 passed" in tool_messages(fake_openai.requests[-1])[-1]  # recent turns whole


async def test_retries_on_429_then_succeeds(project: Path, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(Error(429, "slow down", retry_after=0), *fix_average_script())
    session = make_session(project, fake_openai.base_url, model=model_settings(fake_openai, 1))
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED and len(fake_openai.requests) == 5


async def test_text_tool_protocol_completes_a_fix(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    def block(name: str, **args: object) -> str:
        return f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(args)}}}</tool_call>'

    fake_openai.script(
        Reply("Let me look.\n" + block("read_file", path="calc.py")),
        Reply(block("edit_file", path="calc.py", old_text=BUG, new_text=FIX)),
        Reply(block("run_tests")),
        Reply(SUMMARY),
    )
    session = make_session(
        project,
        fake_openai.base_url,
        model={
            "toolCalling": "text",
            "baseUrl": fake_openai.base_url,
            "apiKey": "k",
            "maxRetries": 0,
            "name": "m",
        },
    )
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED and outcome.summary == SUMMARY
    assert all("tools" not in r for r in fake_openai.requests)
    system = fake_openai.requests[0]["messages"][0]["content"]
    assert "<tool_call>" in system and "- edit_file:" in system
    last = fake_openai.requests[3]["messages"]
    assert last[-1]["role"] == "user" and "pytest: 2 passed" in last[-1]["content"]
    assert all(m["role"] != "tool" for m in last)
    assert (project / "calc.py").read_text().count(FIX) == 1


async def test_auto_switches_to_text_tools_when_the_endpoint_refuses_them(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        Error(400, "this model does not support tools"),
        Reply('<tool_call>{"name": "run_tests", "arguments": {}}</tool_call>'),
        Reply("Nothing to change."),
    )
    session = make_session(project, fake_openai.base_url, maxSteps=2)
    task = Task(kind=TaskKind.TASK, instruction="run the tests and report")
    outcome = await session.run_task(task, RecordingChannel())
    await session.aclose()
    assert "tools" in fake_openai.requests[0] and "tools" not in fake_openai.requests[1]
    assert (
        "tests did not pass: 1 passed, 1 failed"
        in fake_openai.requests[2]["messages"][-1]["content"]
    )
    assert outcome.status is TaskStatus.FAILED  # the suite still fails: not done
