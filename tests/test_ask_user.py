"""`ask_user` through the EditorChannel seam, steer notes, and the pause on a conflict found
when a continued task's context is rebuilt (component tests: the real openai client against the
scripted server)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

from agent_lsp.loop.control import TaskControl
from agent_lsp.messages import TaskStatus
from agent_lsp.task import Task, TaskKind
from tests.e2e.test_lsp_tests import until
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages
from tests.test_agent import make_session


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A project without a test runner: a task ends when the model stops."""
    root = tmp_path / "plain"
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    return root


def ask(question: str, options: list[str] | None = None) -> Reply:
    args: dict[str, object] = {"question": question}
    if options is not None:
        args["options"] = options
    return Reply(tool_calls=[ToolCall("ask_user", args)])


async def test_the_answer_a_skip_and_a_silence_reach_the_model_in_words(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        ask("Greet in English or French?", ["English", "French"]),
        ask("Anything else?", ["No"]),
        ask("Which name?"),
        Reply("Done."),
    )
    channel = RecordingChannel()
    channel.answers = ["French", "Skip", None]
    session = make_session(plain, fake_openai.base_url)
    task = Task(kind=TaskKind.TASK, instruction="greet")
    outcome = await session.run_task(task, channel)
    assert outcome.status is TaskStatus.COMPLETED
    assert channel.questions == ["Greet in English or French?", "Anything else?", "Which name?"]
    assert channel.options == [["English", "French", "Skip"], ["No", "Skip"], []]
    results = tool_messages(fake_openai.requests[3])
    assert "the user answered: French" in results[0]
    assert "no answer: the user chose not to answer" in results[1]
    assert "no answer: the user gave no answer (dismissed, or no one to answer)" in results[2]

    fake_openai.script(ask("Which name?"), Reply("Done."))
    channel = RecordingChannel()
    channel.silent = True  # nobody there: the question times out
    session.settings.ask_timeout = 0.5
    await session.run_task(task, channel)
    await session.aclose()
    assert "no answer: no answer within 0 s. Decide yourself" in tool_messages(
        fake_openai.requests[-1]
    )[0].replace("0.5", "0")


class OwnTimeoutChannel(RecordingChannel):
    """An editor channel whose own wait for the user runs out (as the LSP one's does, after
    askTimeout too): no answer, just before the task's wait would end."""

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        await asyncio.sleep(0.29)
        return None


async def test_a_question_whose_channel_gives_up_at_the_timeout_is_a_timeout() -> None:
    answer = await TaskControl(OwnTimeoutChannel(), timeout=0.3).ask("Fix it?", ["Yes", "No"])
    assert (answer.text, answer.why) == (None, "no answer within 0 s")
    answer = await TaskControl(RecordingChannel(), timeout=5).ask("Fix it?", ["Yes"])
    assert answer.why == "the user gave no answer (dismissed, or no one to answer)"


async def test_a_yes_to_a_permission_question_grants_nothing(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        ask("May I run git push?", ["yes", "no"]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "touch pushed.txt"})]),
        Reply("Stopped."),
    )
    channel = RecordingChannel()
    channel.answers = ["yes", "Deny"]  # yes to the question, then the policy asks: Deny
    session = make_session(plain, fake_openai.base_url)
    await session.run_task(Task(kind=TaskKind.TASK, instruction="publish"), channel)
    await session.aclose()
    assert channel.questions[1].startswith("agent-lsp wants to run: touch pushed.txt")
    first, second = tool_messages(fake_openai.requests[2])
    assert "the user answered: yes (this answer grants no permission" in first
    assert "not run: user: denied" in second
    assert not (plain / "pushed.txt").exists()


class HeldChannel(RecordingChannel):
    """A user who answers a question only once `release` is set."""

    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer
        self.release = asyncio.Event()

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        await super().ask(question, options)
        await self.release.wait()
        return self.answer


async def test_a_steer_note_is_taken_at_the_next_step_and_never_answers_a_question(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    session = make_session(plain, fake_openai.base_url)
    steered = asyncio.Event()

    def first(_: object) -> Reply:  # the user types a note while the model thinks
        assert session.steer("  call it hello  ")
        steered.set()
        return Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})])

    fake_openai.script(first, ask("Which greeting?"), Reply("Done."))
    channel = HeldChannel("in French")
    task = Task(kind=TaskKind.TASK, instruction="greet")
    running = asyncio.ensure_future(session.run_task(task, channel))
    await asyncio.wait_for(steered.wait(), 60)
    await until(lambda: len(fake_openai.requests) >= 2 and bool(channel.questions))
    assert session.steer("say bonjour")  # while the question waits: a note, not the answer
    await asyncio.sleep(0.5)  # were a note an answer, the question would have ended by now
    assert len(fake_openai.requests) == 2
    channel.release.set()
    outcome = await asyncio.wait_for(running, 120)
    assert not session.steer("too late")  # no task runs
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    second = fake_openai.requests[1]["messages"]
    assert second[-1] == {
        "role": "user",
        "content": "A note from the user, sent while you work: call it hello",
    }
    third = fake_openai.requests[2]
    assert "the user answered: in French" in tool_messages(third)[-1]
    assert third["messages"][-1] == {
        "role": "user",
        "content": "A note from the user, sent while you work: say bonjour",
    }
    assert "steer: call it hello" in [e.message for e in channel.events]


async def test_a_conflict_at_the_rebuild_pauses_the_continued_task_until_the_user_says_go_on(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    (plain / "helper.py").write_text("X = 1\n")
    note = "helper.py holds the greeting"
    fake_openai.script(
        Reply(tool_calls=[ToolCall("update_task", {"section": "progress", "content": note})])
    )
    session = make_session(plain, fake_openai.base_url, maxSteps=1)
    task = Task(kind=TaskKind.TASK, instruction="greet")
    first = await session.run_task(task, RecordingChannel())
    assert first.stop_reason == "max steps"

    (plain / "helper.py").unlink()  # the user moved things meanwhile
    conventions = plain / ".agent-lsp/state/project/conventions.md"
    conventions.write_text("Greetings are in French.\n")
    channel = RecordingChannel()
    channel.answers = ["Stop"]
    paused = await session.run_task(task, channel, hint="go on")
    assert (paused.status, paused.stop_reason) == (TaskStatus.PAUSED, "conflict")
    assert len(fake_openai.requests) == 1  # nothing acted on
    (question,) = channel.questions
    assert "the task state names helper.py, which no longer exists" in question
    assert "the project's conventions changed" in question
    assert channel.options == [["Go on", "Stop"]]
    assert "the user said stop" in paused.summary

    fake_openai.script(Reply("Done."))
    channel = RecordingChannel()
    channel.answers = ["Go on"]
    done = await session.run_task(task, channel, hint="the greeting is in app.py now")
    assert done.status is TaskStatus.COMPLETED and done.task_id == first.task_id
    # both hints and the answer reach the model (consecutive user messages are sent as one)
    last = fake_openai.requests[1]["messages"][-1]
    assert last == {
        "role": "user",
        "content": "go on\n\nthe greeting is in app.py now\n\nAsked before going on, the user "
        "said go on despite: the task state names helper.py, which no longer exists (renamed or "
        "deleted?); the project's conventions changed (the project state or rules files)",
    }

    fake_openai.script(Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]))
    again = RecordingChannel()  # what the user let pass is not asked again
    await session.run_task(Task(kind=TaskKind.TASK, instruction="greet"), again)
    await session.aclose()
    assert again.questions == []
