"""Each step is done by the role it names: the executor's step is decided by the exit code of
its last command (not by its words), the tester writes test files only and its failing tests
go back to the planner with its root cause, at most twice."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.team import Phase
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.records import read_signed
from tests.team.conftest import (
    AREA,
    AREA_BODY,
    AREA_STUB,
    COMMANDER,
    PERIMETER,
    PLANNER,
    REVIEWER,
    edit_step,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import first_user, requests_of, run_team, tool_names

WRONG_TEST = "from area import square_area\n\n\ndef test_two():\n    assert square_area(2) == 5\n"
RIGHT_TEST = WRONG_TEST.replace("== 5", "== 4")
FIX_AREA = {"old_text": "side * side", "new_text": "side ** 2"}
ROOT_CAUSE = "the expectation is wrong: a square of side 2 has area 4, square_area is right"


def run(command: str, says: str) -> list[Reply]:
    return [Reply(tool_calls=[ToolCall("run_command", {"command": command})]), Reply(says)]


async def test_the_exit_code_decides_an_executors_step_whatever_the_model_says(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        plan_reply(
            {"id": "s1", "goal": "list area.py", "role": "run"},
            {"id": "s2", "goal": "list the missing file", "role": "run", "depends_on": ["s1"]},
        ),
    )
    fake_openai.script_for(step_marker("s1"), *run("ls area.py", "it failed, sorry"))
    fake_openai.script_for(step_marker("s2"), *run("ls no-such-file", "done, all fine"))
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.FAILED
    assert [(s.id, s.status.value) for s in outcome.steps] == [("s1", "done"), ("s2", "failed")]
    assert "step failed: s2: the command failed (exit code 2); the executor said: done, all " in (
        outcome.summary
    )
    executor = requests_of(fake_openai, step_marker("s1"))[0]
    assert "[team role: executor]" in first_user(executor)
    assert "run_command" in tool_names(executor)
    assert not tool_names(executor) & {"edit_file", "write_file", "run_tests"}
    assert tool_names(executor) == {"read_file", "run_command"}  # the only schemas sent
    assert (shapes / "area.py").read_text() == AREA_STUB
    assert not requests_of(fake_openai, REVIEWER)


async def test_a_testers_failing_tests_go_back_to_the_planner_with_the_root_cause(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    extra = "tests/test_area_extra.py"
    (shapes / "perimeter.py").write_text(PERIMETER)  # only the area is left to do
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        plan_reply(
            {"id": "s1", "goal": "implement square_area", "files": ["area.py"]},
            {"id": "s2", "goal": "test square_area", "role": "test", "depends_on": ["s1"]},
        ),
        plan_reply({"id": "s3", "goal": "correct the new test", "role": "test", "files": [extra]}),
    )
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(
        step_marker("s2"),
        Reply(tool_calls=[ToolCall("edit_file", {**FIX_AREA, "path": "area.py"})]),
        Reply(tool_calls=[ToolCall("write_file", {"path": extra, "content": WRONG_TEST})]),
        Reply(tool_calls=[ToolCall("run_tests", {"targets": [extra]})]),
        Reply(ROOT_CAUSE),
    )
    fix = {"path": extra, "old_text": "== 5", "new_text": "== 4"}
    fake_openai.script_for(
        step_marker("s3"),
        Reply(tool_calls=[ToolCall("edit_file", fix)]),
        Reply(tool_calls=[ToolCall("run_tests", {"targets": [extra]})]),
        Reply("the new test passes"),
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.DONE, outcome.summary
    assert [(s.id, s.status.value) for s in outcome.steps] == [
        ("s1", "done"),
        ("s2", "replaced"),
        ("s3", "done"),
    ]
    assert (shapes / "area.py").read_text() == AREA  # the tester could not write it
    assert (shapes / extra).read_text() == RIGHT_TEST
    s2 = requests_of(fake_openai, step_marker("s2"))
    refused = next(m["content"] for m in s2[1]["messages"] if m["role"] == "tool")
    assert "tester s2: writes test files only, not area.py" in refused
    assert "edit_file" in tool_names(s2[0]) and "run_command" not in tool_names(s2[0])
    assert tool_names(s2[0]) == {"read_file", "write_file", "edit_file", "run_tests"}
    replan = first_user(requests_of(fake_openai, PLANNER)[1])
    assert "## Steps that failed and must be planned again\ns2: test square_area — " in replan
    assert "— tests did not pass: 0 passed, 1 failed" in replan
    assert f"; root cause (the tester): {ROOT_CAUSE}" in replan
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["test_replans"] == 1 and saved["replans"] == 0
    assert "full suite: 3 passed" in outcome.summary


async def test_a_tester_failing_past_the_retry_limit_ends_the_task(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        *[plan_reply({"id": "t", "goal": "test square_area", "role": "test"}) for _ in range(3)],
    )
    fake_openai.script_for("## Your step\nt", *[Reply("I could not run them")] * 3)
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.FAILED
    assert outcome.summary.startswith(
        "failed in EXECUTING: the tests still fail after 2 re-plans: the tester ran no tests; "
        "it said: I could not run them"
    )
    assert [s.id for s in outcome.steps] == ["t", "t-2", "t-3"]
    assert len(requests_of(fake_openai, PLANNER)) == 3
    assert not requests_of(fake_openai, REVIEWER)
