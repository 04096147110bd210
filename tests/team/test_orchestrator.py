"""Team mode in-process: the real openai client against the scripted fake server (a script
per role and step), real pytest on a two-module project, the real loop under every role."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from agent_lsp.config.schema import PermissionLevel
from agent_lsp.messages import TaskStatus
from agent_lsp.team import Phase, TeamStore
from agent_lsp.team.orchestrator import TeamOptions
from agent_lsp.team.state import Step, StepStatus
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall
from tests.records import read_signed
from tests.team.conftest import (
    AREA,
    AREA_BODY,
    COMMANDER,
    PERIMETER,
    PERIMETER_BODY,
    PLANNER,
    REVIEWER,
    TASK,
    TWO_STEPS,
    edit_step,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import first_user, make_session, requests_of, run_team, tool_names


async def test_a_two_module_feature_over_two_workers(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(*TWO_STEPS))
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(
        step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done")
    )
    fake_openai.script_for(REVIEWER, review([]))
    channel = RecordingChannel()
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=2), channel=channel)

    assert outcome.phase is Phase.DONE and outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert outcome.verified
    assert (shapes / "area.py").read_text() == AREA
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    assert sorted(outcome.changed_files) == ["area.py", "perimeter.py"]
    assert "full suite: 2 passed" in outcome.summary
    # tokens per role, summed from each loop's usage (the fake reports what was scripted)
    assert {k: v.total for k, v in outcome.usage.items()} == {
        "commander": 35,
        "planner": 120,
        "editor": 2 * (60 + 70 + 80),
        "reviewer": 90,
    }
    assert (
        "tokens by role: commander 35, planner 120, editor 420, reviewer 90 tokens"
        in outcome.summary
    )
    # routing: each worker's request held its own step and nothing of the other's or the task
    s1, s2 = (
        requests_of(fake_openai, step_marker("s1")),
        requests_of(fake_openai, step_marker("s2")),
    )
    assert len(s1) == 3 and len(s2) == 3
    assert "implement square_area" in first_user(s1[0])
    # small step files: no retriever call, the editor has their numbered lines whole
    assert requests_of(fake_openai, "[team role: retriever]") == []
    assert (
        "### area.py lines 1-2: the whole file\n   1| def square_area(side):\n"
        "   2|     raise NotImplementedError"
    ) in first_user(s1[0])
    for request in s1:
        text = first_user(request)
        assert "square_perimeter" not in text and "perimeter.py" not in text and TASK not in text
    for request in s2:
        text = first_user(request)
        assert "square_area" not in text and "area.py" not in text and TASK not in text
    # the planner and the reviewer are read-only; the workers write
    planner = requests_of(fake_openai, PLANNER)[0]
    assert TASK in first_user(planner)
    assert not tool_names(planner) & {"edit_file", "write_file", "run_command"}
    reviewer = requests_of(fake_openai, REVIEWER)[0]
    assert not tool_names(reviewer) & {"edit_file", "write_file", "run_command", "run_tests"}
    assert "area.py\nperimeter.py" in first_user(reviewer) or "perimeter.py\narea.py" in (
        first_user(reviewer)
    )
    assert "full suite: 2 passed" in first_user(reviewer)
    assert "implement square_area" not in first_user(reviewer)  # the steps are not its context
    assert "implement square_area" not in first_user(planner)
    assert "edit_file" in tool_names(s1[0])
    # both workers were under way at once: s2's first request came before s1 finished
    order = [first_user(r) for r in fake_openai.requests]
    first_s2 = next(i for i, t in enumerate(order) if step_marker("s2") in t)
    last_s1 = max(i for i, t in enumerate(order) if step_marker("s1") in t)
    assert first_s2 < last_s1
    # the checkpoint holds the whole story
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["phase"] == "DONE"
    assert saved["history"] == [
        "INIT→PLANNING",
        "PLANNING→EXECUTING",
        "EXECUTING→VERIFYING",
        "VERIFYING→REVIEWING",
        "REVIEWING→DONE",
    ]
    assert [s["status"] for s in saved["steps"]] == ["done", "done"]
    # progress names the role and the step
    messages = [e.message for e in channel.events]
    assert any(m.startswith("team: editor s1 completed (210 tokens)") for m in messages)
    assert any(m.startswith("team: planner completed (120 tokens)") for m in messages)
    assert "team: DONE" in messages


async def test_a_team_task_is_in_the_session_log_role_by_role(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    """`agent-lsp log` (and `run --json`) see a team task as they see a single one: its start
    and end, and each role's model calls (tokens) and tool calls (status), with role and step."""
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(*TWO_STEPS))
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(
        step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done")
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=2))
    assert outcome.phase is Phase.DONE, outcome.summary

    [log] = list((shapes / ".agent-lsp" / "logs").glob("*.jsonl"))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    mine = [e for e in lines if e.get("task_id") == outcome.task_id]
    assert mine[0]["kind"] == "task_start" and mine[0]["title"].startswith("team: ")
    assert mine[-1]["kind"] == "task_end" and mine[-1]["status"] == "completed"
    calls = [(e["role"], e["prompt_tokens"]) for e in mine if e["kind"] == "model_call"]
    assert sorted(calls) == sorted(
        [("commander", 30), ("planner", 100), ("reviewer", 80)]
        + [("editor", 50), ("editor", 60), ("editor", 70)] * 2
    ), calls
    edits = [
        (e["team_step"], e["tool"], e["status"])
        for e in mine
        if e["kind"] == "tool_call" and e["tool"] == "edit_file"
    ]
    assert sorted(edits) == [
        ("editor s1", "edit_file", "success"),
        ("editor s2", "edit_file", "success"),
    ]


async def test_a_runaway_editor_is_stopped_by_its_share_of_the_budget(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "implement square_area", "files": ["area.py"]})
    )
    # the editor lists the files forever, each call costing 1000 tokens
    runaway = Reply(tool_calls=[ToolCall("list_files", {})], usage=(900, 100))
    fake_openai.script_for(step_marker("s1"), *[runaway] * 40)
    options = TeamOptions(tokens=5000)  # editor share: 40% = 2000 tokens
    outcome = await run_team(shapes, fake_openai, options=options)
    assert outcome.phase is Phase.FAILED
    assert "step failed: s1: token budget (2000 of 2000 tokens) used up" in outcome.summary
    assert outcome.usage["editor"].total == 2000
    assert len(requests_of(fake_openai, step_marker("s1"))) == 2
    assert (shapes / "area.py").read_text().endswith("raise NotImplementedError\n")
    assert not requests_of(fake_openai, REVIEWER)


async def test_a_finding_goes_to_the_planner_and_the_round_limit_ends_it(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    finding = {
        "severity": "warning",
        "file": "area.py",
        "line": 1,
        "category": "style",
        "finding": "square_area has no docstring",
        "suggestion": "add one",
    }
    fix = {"id": "r1", "goal": "document square_area", "files": ["area.py"]}
    # round 1: a finding -> the planner plans step r1; its worker answers; round 2: the same
    fake_openai.script_for(PLANNER, plan_reply(*TWO_STEPS), plan_reply(fix))
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(
        step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done")
    )
    fake_openai.script_for(REVIEWER, review([finding]), review([finding]))
    fake_openai.script_for(step_marker("r1"), Reply("added nothing, sorry", usage=(10, 5)))
    options = TeamOptions(review_rounds=1)
    outcome = await run_team(shapes, fake_openai, options=options)
    told = "warning area.py:1 [style] square_area has no docstring — add one"
    assert outcome.phase is Phase.FAILED
    assert f"review round limit (1) reached; open: {told}" in outcome.summary
    assert [s.id for s in outcome.steps] == ["s1", "s2", "r1"]
    planner = requests_of(fake_openai, PLANNER)
    assert len(planner) == 2  # the planner, not the orchestrator, turned the finding into a step
    assert f"## Review findings: plan the steps that resolve them\n{told}" in first_user(planner[1])
    assert "Review findings" not in first_user(planner[0])
    sent_back = requests_of(fake_openai, step_marker("r1"))
    assert len(sent_back) == 1
    assert "r1: document square_area" in first_user(sent_back[0])
    assert len(requests_of(fake_openai, REVIEWER)) == 2
    assert (shapes / "area.py").read_text() == AREA
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert "REVIEWING→PLANNING" in saved["history"] and saved["open_findings"] == []


async def test_a_stale_write_is_refused_and_the_step_planned_again(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    # s1 and s2 run at once; s2 (wrongly planned as independent) edits area.py blind, after
    # s1 wrote it: the write is refused, s2 is planned again as s3, which reads first.
    area = shapes / "area.py"
    docstring = {
        "path": "area.py",
        "old_text": "def square_area(side):\n",
        "new_text": 'def square_area(side):\n    """The area of a square."""\n',
    }

    def after_s1_wrote(_: dict[str, Any]) -> Reply:
        deadline = time.monotonic() + 60
        while area.read_text() != AREA and time.monotonic() < deadline:
            time.sleep(0.05)
        return Reply(tool_calls=[ToolCall("edit_file", docstring)])

    fake_openai.script_for(COMMANDER, record_reply())

    fake_openai.script_for(
        PLANNER,
        plan_reply(*TWO_STEPS),
        plan_reply({"id": "s3", "goal": "document square_area", "files": ["area.py"]}),
    )
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(
        step_marker("s2"),
        after_s1_wrote,
        Reply("my edit was refused"),
    )
    fake_openai.script_for(
        step_marker("s3"),
        Reply(tool_calls=[ToolCall("read_file", {"path": "area.py"})]),
        Reply(tool_calls=[ToolCall("edit_file", docstring)]),
        *edit_step("perimeter.py", PERIMETER_BODY, "documented, perimeter done"),
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=2))

    assert outcome.phase is Phase.DONE, outcome.summary
    assert area.read_text() == 'def square_area(side):\n    """The area of a square."""\n' + (
        AREA_BODY
    )
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    assert [(s.id, s.status.value) for s in outcome.steps] == [
        ("s1", "done"),
        ("s2", "replaced"),
        ("s3", "done"),
    ]
    # s2's model saw the refusal as the result of its edit
    s2 = requests_of(fake_openai, step_marker("s2"))
    refusal = next(m["content"] for m in s2[-1]["messages"] if m["role"] == "tool")
    assert "a stale write to area.py was refused: another step changed it meanwhile" in refusal
    # the planner was asked again, with the stale step, and only then
    replan = requests_of(fake_openai, PLANNER)
    assert len(replan) == 2
    assert "s2: implement square_perimeter — a stale write to area.py was refused" in first_user(
        replan[1]
    )
    assert "Steps that failed" not in first_user(replan[0])
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["history"][:4] == [
        "INIT→PLANNING",
        "PLANNING→EXECUTING",
        "EXECUTING→PLANNING",
        "PLANNING→EXECUTING",
    ]
    assert saved["replans"] == 1


async def test_a_write_the_edit_tool_refused_makes_the_step_stale(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    """s2 reads area.py, s1 then writes it: s2's edit is refused by edit_file's own check (the
    file changed since s2 read it), and so is the same blind edit again; s2's model then says
    it finished. The step is stale — back to the planner — not done."""
    area = shapes / "area.py"
    s2_has_read = threading.Event()
    docstring = {
        "path": "area.py",
        "old_text": "def square_area(side):\n",
        "new_text": 'def square_area(side):\n    """The area of a square."""\n',
    }
    s1_read, s1_edit, s1_done = edit_step("area.py", AREA_BODY, "area done")

    def s1_edits_after_s2_read(_: dict[str, Any]) -> Reply:
        s2_has_read.wait(60)
        return s1_edit

    def s2_edits_after_s1_wrote(_: dict[str, Any]) -> Reply:
        s2_has_read.set()  # its read's result is in this request
        deadline = time.monotonic() + 60
        while area.read_text() != AREA and time.monotonic() < deadline:
            time.sleep(0.05)
        return Reply(tool_calls=[ToolCall("edit_file", docstring)])

    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        plan_reply(*TWO_STEPS),
        plan_reply({"id": "s3", "goal": "document square_area", "files": ["area.py"]}),
    )
    fake_openai.script_for(step_marker("s1"), s1_read, s1_edits_after_s2_read, s1_done)
    fake_openai.script_for(
        step_marker("s2"),
        Reply(tool_calls=[ToolCall("read_file", {"path": "area.py"})]),
        s2_edits_after_s1_wrote,
        Reply(tool_calls=[ToolCall("edit_file", docstring)]),  # blind, again
        Reply("finished"),
    )
    fake_openai.script_for(
        step_marker("s3"),
        Reply(tool_calls=[ToolCall("read_file", {"path": "area.py"})]),
        Reply(tool_calls=[ToolCall("edit_file", docstring)]),
        *edit_step("perimeter.py", PERIMETER_BODY, "documented, perimeter done"),
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=2))

    assert outcome.phase is Phase.DONE, outcome.summary
    assert [(s.id, s.status.value) for s in outcome.steps] == [
        ("s1", "done"),
        ("s2", "replaced"),
        ("s3", "done"),
    ]
    s2 = requests_of(fake_openai, step_marker("s2"))
    refusals = [m["content"] for m in s2[-1]["messages"] if m["role"] == "tool"][1:]
    assert len(refusals) == 2 and all("changed since you last read it" in r for r in refusals)
    # the docstring went in once, by s3 after its read; never blind by s2
    assert area.read_text() == 'def square_area(side):\n    """The area of a square."""\n' + (
        AREA_BODY
    )
    replan = requests_of(fake_openai, PLANNER)
    assert len(replan) == 2
    assert "s2: implement square_perimeter — a stale write was refused (edit_file: area.py " in (
        first_user(replan[1])
    )


async def test_a_worker_past_the_time_budget_is_stopped(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "implement square_area", "files": ["area.py"]})
    )
    fake_openai.script_for(step_marker("s1"), Hang(120))  # a model that never answers
    options = TeamOptions(seconds=10)
    outcome = await run_team(
        shapes,
        fake_openai,
        options=options,
        session=make_session(shapes, fake_openai.base_url, timeout=300),
    )
    assert outcome.phase is Phase.FAILED
    assert "step failed: s1: the task's time budget is used up" in outcome.summary
    assert (shapes / "area.py").read_text().endswith("raise NotImplementedError\n")


async def test_a_plan_that_is_not_json_fails_the_task_with_the_reason(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, Reply("First I would look at area.py, then think."))
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.FAILED
    assert outcome.summary.startswith(
        "failed in PLANNING: the plan is not JSON (Expecting value): First I would look"
    )
    assert len(fake_openai.requests) == 2  # the commander, the planner; no worker, no reviewer
    assert (shapes / "area.py").read_text().endswith("raise NotImplementedError\n")


async def test_a_failing_suite_becomes_a_step_with_the_failures(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    # the plan forgets the perimeter: the suite fails, a step carries the failure to a worker
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "implement square_area", "files": ["area.py"]})
    )
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(
        step_marker("v1"), *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done")
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.DONE, outcome.summary
    assert outcome.verified and "full suite: 2 passed" in outcome.summary
    assert [(s.id, s.status.value) for s in outcome.steps] == [("s1", "done"), ("v1", "done")]
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    told = first_user(requests_of(fake_openai, step_marker("v1"))[0])
    assert "v1: make the full test suite pass" in told
    assert "test_perimeter" in told and "NotImplementedError" in told


async def test_resumed_in_verifying_at_level_l0_the_suite_is_not_run_and_said_so(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    # a checkpoint cut short in VERIFYING; the team's own suite run goes through the user's
    # policy like every other run: at L0 no tests run, and the outcome is not verified
    store = TeamStore(shapes)
    state = store.new(TASK)
    store.move(state, Phase.PLANNING)
    state.steps = [Step(id="s1", goal="implement square_area", status=StepStatus.DONE)]
    store.move(state, Phase.EXECUTING)
    store.move(state, Phase.VERIFYING)
    fake_openai.script_for(REVIEWER, review([]))
    session = make_session(shapes, fake_openai.base_url)
    session.update_settings(
        session.settings.model_copy(update={"permission_level": PermissionLevel.L0})
    )
    outcome = await run_team(shapes, fake_openai, session=session, resume=True)
    assert outcome.phase is Phase.DONE and not outcome.verified
    assert "the tests were not run" in outcome.summary
    assert not (shapes / ".pytest_cache").exists()
    assert [first_user(r).splitlines()[0] for r in fake_openai.requests] == [REVIEWER]
