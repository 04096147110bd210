"""Component tests: the agent loop, the real openai client, the fake server and real pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_lsp.config.schema import Settings
from agent_lsp.messages import EventKind, TaskStatus
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.session import Session
from agent_lsp.task import DiagnosticInfo, Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import Error, FakeOpenAIServer, Reply, ToolCall
from tests.scripts import SUMMARY, fix_average_script, tool_messages

CONTRACT_TOOLS = [
    "read_file",
    "list_files",
    "search_text",
    "find_symbol",
    "edit_file",
    "write_file",
    "run_tests",
    "run_command",
    "git_status",
    "git_diff",
    "get_diagnostics",
    "remember",
    "update_task",
    "ask_user",
]

FIX_TASK = Task(
    kind=TaskKind.FIX,
    instruction="",
    path="calc.py",
    diagnostic=DiagnosticInfo(message="average() is wrong", line=9, source="pytest"),
)


def make_session(project: Path, base_url: str, **overrides: object) -> Session:
    settings = Settings.model_validate(
        {
            "model": {
                "baseUrl": base_url,
                "name": "fake-model",
                "apiKey": "test-key",
                "maxRetries": 0,
                "timeout": 10,
            },
            **overrides,
        }
    )
    return Session(project, settings, OpenAICompatModel(settings.model))


@pytest.mark.parametrize("stream", [True, False])
async def test_fix_lands_in_the_buffer_and_tests_run_on_the_buffer_text(
    project: Path, fake_openai: FakeOpenAIServer, stream: bool
) -> None:
    calc = project / "calc.py"
    on_disk = calc.read_text()
    channel = RecordingChannel({calc: on_disk})
    fake_openai.script(*fix_average_script())
    session = make_session(project, fake_openai.base_url)
    session.settings.model.stream = stream

    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome
    assert outcome.summary == SUMMARY
    assert outcome.changed_files == ["calc.py"]
    # The edit went to the editor buffer, whole and exact; the file on disk is untouched.
    assert [(p, label) for p, _, label in channel.edits] == [(calc, "agent-lsp: edit calc.py")]
    assert channel.open[calc.resolve()] == on_disk.replace(BUG, FIX)
    assert calc.read_text() == on_disk
    # What the model was sent: the task with the diagnostic and code, the tools, the results.
    requests = fake_openai.requests
    assert len(requests) == 4
    assert all(r.get("stream", False) is stream for r in requests)
    first = requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == CONTRACT_TOOLS
    user = first["messages"][1]["content"]
    assert "calc.py at line 10: [pytest] average() is wrong" in user
    assert "10|     return sum(values) / (len(values) + 1)" in user
    results = tool_messages(requests[3])
    assert '"status":"success"' in results[1] and "edited calc.py at line 10" in results[1]
    # The suite passed on the buffer's text although the disk still holds the bug.
    assert "pytest: 2 passed, 0 failed" in results[2] and '"status":"success"' in results[2]
    kinds = [e.kind for e in channel.events]
    assert kinds[0] is EventKind.STARTED and EventKind.TOOL_RESULT in kinds


async def test_bad_tool_calls_become_error_results_and_the_loop_goes_on(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("delete_everything", {})]),
        Reply(tool_calls=[ToolCall("read_file", "{not json")]),
        Reply(tool_calls=[ToolCall("read_file", {"path": 3, "start_line": "x"})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "edit_file", {"path": "calc.py", "old_text": "retrun x", "new_text": "return x"}
                )
            ]
        ),
        Reply(tool_calls=[ToolCall("read_file", {"path": "../../etc/passwd"})]),
        *fix_average_script(),
    )
    channel = RecordingChannel()
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED
    errors = tool_messages(fake_openai.requests[5])
    unknown = "unknown tool 'delete_everything'; available: ask_user, edit_file, find_symbol,"
    assert unknown in errors[0]
    assert "arguments for read_file are not valid JSON" in errors[1]
    assert "invalid arguments for read_file: path: Input should be a valid string" in errors[2]
    assert "old_text not found in calc.py" in errors[3]
    assert "outside the workspace" in errors[4]
    assert all('"status":"error"' in e for e in errors)
    assert (project / "calc.py").read_text().count(FIX) == 1  # closed file: written on disk


async def test_done_is_decided_by_the_tests_not_the_model(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(Reply("All fixed, trust me."), *fix_average_script())
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED
    feedback = fake_openai.requests[1]["messages"][-1]
    assert feedback["role"] == "user"
    assert "the test suite does not pass" in feedback["content"]
    assert "FAILED tests/test_calc.py::test_average at tests/test_calc.py:9" in feedback["content"]


async def test_max_steps_stops_the_task(project: Path, fake_openai: FakeOpenAIServer) -> None:
    read = Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})])
    fake_openai.script(read, read, read)
    session = make_session(project, fake_openai.base_url, maxSteps=3)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert (outcome.status, outcome.stop_reason, outcome.steps) == (
        TaskStatus.FAILED,
        "max steps",
        3,
    )


async def test_model_http_error_ends_the_task_with_a_clear_message(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(Error(500, "upstream exploded"))
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.ERROR
    assert outcome.summary == (
        "model error: the model endpoint answered HTTP 500: upstream exploded"
    )


async def test_unreachable_model(project: Path) -> None:
    session = make_session(project, "http://127.0.0.1:9/v1")
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.ERROR
    assert "cannot reach the model at http://127.0.0.1:9/v1" in outcome.summary


async def test_rejected_edit_is_reported_to_the_model_and_nothing_is_lost(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    calc = project / "calc.py"
    before = calc.read_text()
    fake_openai.script(
        *fix_average_script()[:2], Reply("I could not edit the file."), Reply("Still cannot.")
    )
    channel = RecordingChannel({calc: before}, reject_edits=True)
    session = make_session(project, fake_openai.base_url, maxSteps=4)
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()
    assert outcome.status is TaskStatus.FAILED
    assert "the editor rejected the edit: user said no" in tool_messages(fake_openai.requests[2])[1]
    assert channel.open[calc.resolve()] == before and calc.read_text() == before


async def test_the_model_is_told_the_project_profile_and_git_status(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    import git

    repo = git.Repo.init(project, initial_branch="main")
    repo.index.add(["calc.py", "tests/test_calc.py", "pyproject.toml"])
    repo.index.commit("initial sample", author=git.Actor("t", "t@example.com"))
    (project / "calc.py").write_text((project / "calc.py").read_text() + "\n# touched\n")
    (project / "notes.txt").write_text("scratch\n")
    fake_openai.script(*fix_average_script())
    session = make_session(project, fake_openai.base_url)
    await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    system = fake_openai.requests[0]["messages"][0]["content"]
    assert "tests: pytest" in system
    assert "git: branch main\n  modified: calc.py\n  untracked: notes.txt" in system
    assert "last commits: " in system and " initial sample" in system


async def test_the_prompt_carries_a_repo_map_and_find_symbol_works(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("find_symbol", {"name": "average"})]), *fix_average_script()
    )
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    user = fake_openai.requests[0]["messages"][1]["content"]
    assert user.endswith(
        "Project map (definitions by file; find_symbol for more):\n"
        "calc.py:\n  4: def add(a: float, b: float) -> float\n"
        "  8: def average(values: list[float]) -> float\n"
        "tests/test_calc.py:\n  4: def test_add() -> None\n  8: def test_average() -> None\n"
    )
    found = tool_messages(fake_openai.requests[1])[0]
    assert "calc.py:8 function: def average(values: list[float]) -> float" in found
    assert "tests/test_calc.py:1: from calc import add, average" in found
