"""Continue a stopped task with a hint: the same task and conversation, the hint its next user
message (component tests: the real openai client against the scripted server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_lsp.errors import AgentLspError
from agent_lsp.messages import TaskStatus
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script
from tests.test_agent import make_session

TASK = "make the failing test pass"


def conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages after the system prompt, as the model was sent them."""
    return [m for m in request["messages"] if m["role"] != "system"]


def read(path: str) -> Reply:
    return Reply(tool_calls=[ToolCall("read_file", {"path": path})])


async def test_a_task_stopped_at_max_steps_goes_on_with_the_hint_in_the_same_conversation(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(read("calc.py"), read("tests/test_calc.py"), read("pyproject.toml"))
    channel = RecordingChannel()
    session = make_session(project, fake_openai.base_url, maxSteps=3)
    task = Task(kind=TaskKind.TASK, instruction=TASK)
    first = await session.run_task(task, channel)
    assert (first.status, first.stop_reason, first.steps) == (TaskStatus.FAILED, "max steps", 3)

    _read, edit, run_tests, answer = fix_average_script()
    fake_openai.script(edit, run_tests, answer)
    hint = "the bug is the + 1 in average(); edit calc.py"
    done = await session.run_task(task, channel, hint=hint)
    await session.aclose()

    assert done.status is TaskStatus.COMPLETED and done.verified
    assert done.task_id == first.task_id  # the same task, not a new one
    assert done.steps == 6  # three before, three after the hint (a new allowance of steps)
    assert (project / "calc.py").read_text().count(FIX) == 1
    before, after = fake_openai.requests[2], fake_openai.requests[3]
    earlier = conversation(before)
    assert earlier[0]["content"].startswith(TASK)
    sent = conversation(after)
    assert sent[: len(earlier)] == earlier  # the earlier turns, unchanged
    assert [m["role"] for m in sent[len(earlier) :]] == ["assistant", "tool", "user"]
    assert sent[-1]["content"] == hint  # then the hint
    assert "rebuilt when the user continued the stopped task" in after["messages"][0]["content"]
    messages = [e.message for e in channel.events]
    assert f"continued at step 3: {TASK}" in messages and f"continue: {hint}" in messages


async def test_a_task_the_model_gave_up_on_continues_with_its_last_words_kept(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(Reply("I cannot find the bug."), Reply("I give up."))
    channel = RecordingChannel()
    session = make_session(project, fake_openai.base_url)
    task = Task(kind=TaskKind.TASK, instruction=TASK)
    first = await session.run_task(task, channel)
    assert first.stop_reason == "model stopped"
    assert first.summary.startswith("stopped: the model did not continue")

    fake_openai.script(*fix_average_script())
    done = await session.run_task(task, channel, hint="look at average() in calc.py")
    await session.aclose()
    assert done.status is TaskStatus.COMPLETED and done.task_id == first.task_id
    sent = conversation(fake_openai.requests[2])  # the first request after the hint
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[3]["content"] == "I give up."  # the model's last words, then the hint
    assert sent[4]["content"] == "look at average() in calc.py"
    assert (project / "calc.py").read_text().count(BUG) == 0


async def test_a_completed_task_is_not_continued_and_nothing_is_sent_to_the_model(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(*fix_average_script())
    session = make_session(project, fake_openai.base_url)
    done = await session.run_task(Task(kind=TaskKind.TASK, instruction=TASK), RecordingChannel())
    assert done.status is TaskStatus.COMPLETED
    task = Task(kind=TaskKind.TASK, instruction="")
    with pytest.raises(AgentLspError, match=r"no stopped task to continue \(task \w+ completed"):
        await session.run_task(task, RecordingChannel(), hint="more")
    with pytest.raises(AgentLspError, match=rf"task {done.task_id} completed: nothing to continue"):
        await session.run_task(task, RecordingChannel(), hint="more", task_id=done.task_id)
    with pytest.raises(AgentLspError, match="no task beef to continue"):
        await session.run_task(task, RecordingChannel(), hint="more", task_id="beef")
    await session.aclose()
    assert len(fake_openai.requests) == 4
