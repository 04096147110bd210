"""Experience files: written after a key event only, indexed, recalled for related tasks — the real
openai client against the fake server, real pytest."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.messages import TaskStatus
from agent_lsp.task import DiagnosticInfo, Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.memory.helpers import (
    DISTILLED,
    distilled_reply,
    experience_files,
    fail_fix_script,
    index_rows,
    log_entries,
    system_of,
)
from tests.test_agent import FIX_TASK, make_session

RELATED = Task(
    kind=TaskKind.FIX,
    instruction="",
    path="calc.py",
    diagnostic=DiagnosticInfo(message="average([]) raises ZeroDivisionError", line=9),
)
RECALLED = "Experience from earlier tasks (details: read_file .agent-lsp/memory/<file>)"
UNRELATED = Task(
    kind=TaskKind.TASK, instruction="add a --verbose flag to the command line interface"
)


async def test_fail_fix_pass_writes_one_experience_that_only_related_tasks_get(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(*fail_fix_script(), distilled_reply())
    channel = RecordingChannel()
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED and outcome.steps == 5
    assert len(fake_openai.requests) == 6  # five agent turns + one distillation
    distill = fake_openai.requests[5]
    assert "tools" not in distill  # a plain call
    assert "distil a finished coding task" in system_of(distill)
    transcript = distill["messages"][1]["content"]
    assert (
        "call run_tests" in transcript and "FAILED tests/test_calc.py::test_average" in transcript
    )
    assert "Outcome: completed after 5 steps" in transcript

    [path] = experience_files(project)
    assert path.name.endswith("--average-divides-by-n-plus-one.md")
    text = path.read_text()
    assert text.startswith("# Average divides by n plus one\n")
    assert "- event: fail-fix-pass" in text and "- files: calc.py" in text
    assert f"## Pitfalls\n- {DISTILLED['pitfalls'][0]}" in text
    assert index_rows(project) == [(path.name, "calc.py", "average")]
    saved = [e.message for e in channel.events if e.message.startswith("memory: experience")]
    assert saved == [f"memory: experience saved (fail-fix-pass): .agent-lsp/memory/{path.name}"]
    calls = [e for e in log_entries(session.log_path) if e["kind"] == "model_call"]
    assert [c["purpose"] for c in calls] == ["agent"] * 5 + ["distill"]

    # A later session: a related task is given the experience, an unrelated one is not.
    fake_openai.script(Reply("Nothing to change."), Reply("Nothing to change."))
    session = make_session(project, fake_openai.base_url)
    channel = RecordingChannel()
    related = await session.run_task(RELATED, channel)
    unrelated = await session.run_task(UNRELATED, RecordingChannel())
    await session.aclose()
    assert related.status is unrelated.status is TaskStatus.COMPLETED
    assert len(fake_openai.requests) == 8  # no distillation: neither task had a key event
    assert len(experience_files(project)) == 1

    sent = system_of(fake_openai.requests[6])
    block = sent.split(
        "### Experience from earlier tasks (details: read_file .agent-lsp/memory/<file>)\n"
    )[1]
    entry = block.split("\n")[0]
    assert entry.startswith(f"- Average divides by n plus one ({path.name}). Goal: Make average()")
    assert DISTILLED["pitfalls"][0] in entry and DISTILLED["open_questions"][0] in entry
    assert len(block.split("Before your first action")[0].split()) <= 300
    assert "Before your first action, restate the task in one line." in sent
    assert f"memory: recalled {path.name}" in [e.message for e in channel.events]

    assert "Experience from earlier tasks" not in system_of(fake_openai.requests[7])
    assert "Starting context" not in system_of(fake_openai.requests[7])


ADD_DEPENDENCY = [
    Reply(tool_calls=[ToolCall("write_file", {"path": "requirements.txt", "content": "rich\n"})]),
    Reply("Added rich to the requirements."),
]
STACK_TASK = Task(kind=TaskKind.TASK, instruction="use rich for colour output")


async def test_a_stack_change_is_distilled_and_a_failing_distillation_changes_nothing(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(*ADD_DEPENDENCY)  # nothing scripted for the distillation: HTTP 500
    channel = RecordingChannel()
    session = make_session(plain, fake_openai.base_url)
    outcome = await session.run_task(STACK_TASK, channel)
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    # No test runner in the folder: completed on the model's word, and said so.
    assert outcome.summary == (
        "unverified: no test runner found, so nothing checked the result; the model says: "
        "Added rich to the requirements."
    )
    assert outcome.verified is False
    assert len(fake_openai.requests) == 3
    warns = [e.message for e in channel.events if e.message.startswith("WARN")]
    assert warns == [
        "WARN experience distillation failed (the model endpoint answered HTTP 500: "
        "fake server: script exhausted); wrote a plain one"
    ]
    [path] = experience_files(plain)
    text = path.read_text()
    assert "- event: stack-change: requirements.txt" in text
    assert '1. write_file {"path": "requirements.txt"' in text
    assert len(index_rows(plain)) == 1


async def test_distillation_can_be_turned_off(plain: Path, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.script(*ADD_DEPENDENCY)
    session = make_session(plain, fake_openai.base_url, memory={"distill": False})
    outcome = await session.run_task(STACK_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    assert len(fake_openai.requests) == 2 and experience_files(plain) == []


async def test_an_ordinary_task_makes_no_extra_call_and_writes_no_experience(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]), Reply("greet() is fine.")
    )
    session = make_session(plain, fake_openai.base_url)
    outcome = await session.run_task(STACK_TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    assert len(fake_openai.requests) == 2 and experience_files(plain) == []
    kinds = [e["kind"] for e in log_entries(session.log_path)]
    assert kinds.count("model_call") == 2 and kinds[-1] == "task_end"


async def test_remember_distils_the_last_task_or_keeps_the_note_as_written(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    session = make_session(plain, fake_openai.base_url)
    plain_note = await session.remember("Run  the tests with -p no:cacheprovider (read-only CI)")
    assert plain_note.message == "note saved" and len(fake_openai.requests) == 0
    assert plain_note.path is not None
    assert plain_note.path.endswith("--run-the-tests-with-p-no.md")

    fake_openai.script(Reply("greet() is fine."), distilled_reply())
    await session.run_task(STACK_TASK, RecordingChannel())  # ordinary: no distillation
    assert len(fake_openai.requests) == 1
    result = await session.remember("greet() must keep its 'hi ' prefix")
    await session.aclose()
    assert result.message == "experience saved" and len(fake_openai.requests) == 2
    assert (
        "The user asked to remember: greet() must keep its 'hi ' prefix"
        in (fake_openai.requests[1]["messages"][1]["content"])
    )
    assert len(experience_files(plain)) == 2 and len(index_rows(plain)) == 2
    listed = await session.memory_list()
    assert sorted(e.event for e in listed) == ["remember", "remember"]
    shown = await session.memory_show("run-the-tests")
    assert "Run the tests with -p no:cacheprovider (read-only CI)" in shown
    assert await session.memory_forget("run-the-tests") == Path(plain_note.path).name
    assert len(experience_files(plain)) == 1 and len(index_rows(plain)) == 1
