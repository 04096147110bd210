"""The starting state goes first in the system prompt, between markers; after 10 tool calls
without a read of the task state, the next request reminds the model to re-read it."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.loop.prompt import TASK_FILE
from agent_lsp.messages import TaskStatus
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.memory.helpers import system_of
from tests.test_agent import make_session

TASK = Task(kind=TaskKind.TASK, instruction="make greet() say hello", path="app.py")
REMINDER = (
    "Reminder: 10 tool calls since you last read the task state. Re-read it now "
    f"(read_file {TASK_FILE}): the goal, the progress of every step and the blockers are there."
)


def read(path: str) -> Reply:
    return Reply(tool_calls=[ToolCall("read_file", {"path": path})])


async def test_the_state_block_opens_the_system_prompt_of_the_first_request(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    state = plain / ".agent-lsp/state/project"
    state.mkdir(parents=True)
    (state / "stack.md").write_text("- tests run with pytest (reason: pyproject)\n")
    fake_openai.script(Reply("Nothing to do."))
    session = make_session(plain, fake_openai.base_url)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED

    system = system_of(fake_openai.requests[0])
    assert system.startswith(
        "<<<TASK STATE\n## Starting context, rebuilt at task start\n"
        "These files are the source of truth, over anything earlier in the conversation.\n"
        "### Project state: stack.md\n- tests run with pytest (reason: pyproject)\n"
        "Before your first action, restate the task in one line.\nTASK STATE>>>\n\n"
        f"You are agent-lsp, a coding agent working inside the user's editor on the project at "
        f"{plain.resolve()}."
    )
    assert system.count("TASK STATE>>>") == 1


async def test_ten_calls_without_reading_the_task_state_bring_a_reminder(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    files = ("README.md", "app.py")
    fake_openai.script(
        *(read(files[n % 2]) for n in range(10)),
        read(TASK_FILE),  # it reads the state: the count starts again
        *(read(files[n % 2]) for n in range(9)),
        Reply("Done."),
    )
    session = make_session(plain, fake_openai.base_url, maxSteps=40)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED, outcome

    requests = fake_openai.requests
    assert len(requests) == 21

    def reminders(request: dict[str, object]) -> list[str]:
        messages = request["messages"]
        assert isinstance(messages, list)
        return [str(m["content"]) for m in messages if REMINDER in str(m.get("content"))]

    assert [len(reminders(r)) for r in requests[:10]] == [0] * 10
    last = requests[10]["messages"][-1]
    assert last["role"] == "user" and last["content"] == REMINDER  # right after the 10th call
    assert requests[10]["messages"][-2]["role"] == "tool"
    read_back = requests[11]["messages"][-1]["content"]
    assert "3| ## goal\\n4| make greet() say hello" in read_back  # the task file, read
    assert all(len(reminders(r)) == 1 for r in requests[11:])  # 9 calls since: no new one
