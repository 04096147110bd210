"""The single agent's review before done (issue: the team's reviewer checks existed, the single
agent's done check ran the tests only): a leaked secret in the change goes back to the model once
with what was found; a model that leaves it is done, and the outcome says what was left. The real
openai client against the fake server, real pytest, real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agent_lsp.messages import TaskStatus
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_agent import FIX_TASK, make_session

KEY = '    token = "AKIAABCDEFGHIJKLMNOP"  # inside average(), as the fixed line is\n'
TOLD = "The task is not done: the tests pass, but the review of your change found:"


def committed(project: Path) -> None:
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"],
    ):
        subprocess.run(argv, cwd=project, check=True)


def edit(old: str, new: str) -> Reply:
    return Reply(
        tool_calls=[ToolCall("edit_file", {"path": "calc.py", "old_text": old, "new_text": new})]
    )


def last_user(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str(messages[-1]["content"])


async def test_a_secret_in_the_change_goes_back_once_and_is_removed(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    committed(project)
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        edit(BUG, KEY + BUG.replace(BUG, FIX)),
        Reply("Fixed."),
        edit(KEY, ""),
        Reply("Removed the key."),
    )
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()

    told = last_user(fake_openai.requests[3])
    assert told.startswith(TOLD), told
    assert "[secret] an AWS access key id in the code" in told and "calc.py:" in told
    assert outcome.status is TaskStatus.COMPLETED and outcome.summary == "Removed the key."
    text = (project / "calc.py").read_text()
    assert "AKIA" not in text and text.count(FIX) == 1
    assert "review" not in outcome.checked  # nothing left
    assert len(fake_openai.requests) == 5


async def test_a_model_that_leaves_it_is_done_and_the_outcome_says_so(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    committed(project)
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        edit(BUG, KEY + FIX),
        Reply("Fixed."),
        Reply("The token is needed."),
    )
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()

    assert last_user(fake_openai.requests[3]).startswith(TOLD)
    assert outcome.status is TaskStatus.COMPLETED
    assert "review: 1 error(s) left: " in outcome.checked, outcome.checked
    assert "an AWS access key id" in outcome.checked
    assert len(fake_openai.requests) == 4


async def test_trailing_whitespace_alone_costs_no_model_call(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    committed(project)
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        edit(BUG, FIX.rstrip("\n") + "   \n"),
        Reply("Fixed."),
    )
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED and outcome.summary == "Fixed."
    assert len(fake_openai.requests) == 3
