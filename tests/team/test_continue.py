"""`continue` with a hint on a team task (what `agentLsp.continue` and `run --continue` call):
a FAILED team task goes on from its signed checkpoint, its failed step planned again by the
planner, who is told where the task stopped and the user's hint; the finished steps are not
run again; a DONE task, an unsigned checkpoint, and a single agent's newer stopped task are
not continued as a team task. The real orchestrator against the fake model, and
`agent-lsp run --continue` as a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_lsp.errors import AgentLspError
from agent_lsp.memory.checkpoints import Checkpoint
from agent_lsp.task import Task, TaskKind
from agent_lsp.team import Orchestrator, Phase, TeamStore
from agent_lsp.team.orchestrator import TeamOptions, TeamOutcome
from agent_lsp.team.state import StepStatus
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.team.conftest import (
    AREA,
    AREA_BODY,
    COMMANDER,
    PERIMETER,
    PERIMETER_BODY,
    PLANNER,
    REVIEWER,
    TASK,
    edit_step,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import count, first_user, make_session, requests_of, run_team
from tests.test_cli import agent_lsp

HINT = "HINT-7: skip the check, just implement square_perimeter in perimeter.py"
FAILED_STEPS = (
    {"id": "s1", "goal": "implement square_area", "files": ["area.py"]},
    {"id": "s2", "goal": "run the perimeter check", "files": ["perimeter.py"], "role": "run"},
)
S2_FAILED = "step failed: s2: the executor ran no command; it said: no command to run, sorry"
FIX = {"id": "s3", "goal": "implement square_perimeter", "files": ["perimeter.py"]}


def script_failure(fake: FakeOpenAIServer) -> None:
    """s1 (an edit) done, s2 (a run step) fails: its executor runs nothing."""
    fake.script_for(COMMANDER, record_reply())
    fake.script_for(PLANNER, plan_reply(*FAILED_STEPS), plan_reply(FIX))
    fake.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake.script_for(step_marker("s2"), Reply("no command to run, sorry", usage=(20, 5)))


async def proceed(root: Path, fake: FakeOpenAIServer, task_id: str, hint: str) -> TeamOutcome:
    session = make_session(root, fake.base_url)
    team = Orchestrator(session, RecordingChannel(), TeamOptions(workers=1))
    try:
        return await team.proceed(task_id, hint)
    finally:
        await session.aclose()


async def test_a_failed_team_task_goes_on_with_the_hint_to_the_planner(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    script_failure(fake_openai)
    failed = await run_team(shapes, fake_openai, options=TeamOptions(workers=1))
    assert failed.phase is Phase.FAILED, failed.summary
    assert f"failed in EXECUTING: {S2_FAILED}" in failed.summary
    assert count(fake_openai, step_marker("s1")) == 3
    assert len(requests_of(fake_openai, PLANNER)) == 1

    session = make_session(shapes, fake_openai.base_url)
    try:  # what the front ends ask first: the latest stopped task is this team task
        chosen = session.team_to_continue()
    finally:
        await session.aclose()
    assert chosen is not None and chosen.task_id == failed.task_id

    fake_openai.script_for(step_marker("s3"), *edit_step("perimeter.py", PERIMETER_BODY, "ok"))
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await proceed(shapes, fake_openai, failed.task_id, HINT)
    assert outcome.phase is Phase.DONE, outcome.summary
    assert outcome.task_id == failed.task_id
    assert outcome.verified and "full suite: 2 passed" in outcome.summary
    assert [(s.id, s.status) for s in outcome.steps] == [
        ("s1", StepStatus.DONE),
        ("s2", StepStatus.REPLACED),
        ("s3", StepStatus.DONE),
    ]

    planners = requests_of(fake_openai, PLANNER)
    assert len(planners) == 2  # the continue asked the planner again, once
    told = first_user(planners[1])
    assert (
        "## The task stopped before; the user continues it with a hint\n"
        f"1. It stopped (FAILED in EXECUTING: {S2_FAILED}).\n"
        f"   The user's hint: {HINT}"
    ) in told
    assert (
        "## Steps that failed and must be planned again\ns2: run the perimeter check — it "
        "failed: the executor ran no command; it said: no command to run, sorry"
    ) in told
    assert HINT not in first_user(planners[0])
    assert count(fake_openai, step_marker("s1")) == 3  # the finished step did not run again
    assert count(fake_openai, step_marker("s2")) == 1
    assert count(fake_openai, COMMANDER) == 1  # its record is kept
    assert (shapes / "area.py").read_text() == AREA
    assert (shapes / "perimeter.py").read_text() == PERIMETER

    state = TeamStore(shapes).load(failed.task_id)
    assert [c.hint for c in state.continued] == [HINT]
    assert "EXECUTING→FAILED" in state.history and "FAILED→PLANNING" in state.history

    with pytest.raises(AgentLspError, match="ended DONE: nothing to continue"):
        await proceed(shapes, fake_openai, failed.task_id, "again")
    session = make_session(shapes, fake_openai.base_url)
    try:
        with pytest.raises(AgentLspError, match="ended DONE: nothing to continue"):
            session.team_to_continue()
    finally:
        await session.aclose()


async def test_a_task_failed_on_its_budget_gets_a_new_allowance(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        plan_reply({"id": "s1", "goal": "implement both", "files": ["area.py"]}),
        plan_reply(
            {"id": "s2", "goal": "implement square_area", "files": ["area.py"]},
            {"id": "s3", "goal": "implement square_perimeter", "files": ["perimeter.py"]},
        ),
    )
    runaway = Reply(tool_calls=[ToolCall("list_files", {})], usage=(900, 100))
    fake_openai.script_for(step_marker("s1"), *[runaway] * 2)
    options = TeamOptions(tokens=5000, workers=1)  # editor share: 40% = 2000 tokens
    failed = await run_team(shapes, fake_openai, options=options)
    assert "step failed: s1: token budget (2000 of 2000 tokens) used up" in failed.summary

    fake_openai.script_for(step_marker("s2"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(step_marker("s3"), *edit_step("perimeter.py", PERIMETER_BODY, "ok"))
    fake_openai.script_for(REVIEWER, review([]))
    session = make_session(shapes, fake_openai.base_url)
    team = Orchestrator(session, RecordingChannel(), options)
    try:
        outcome = await team.proceed(failed.task_id, "")
    finally:
        await session.aclose()
    assert outcome.phase is Phase.DONE, outcome.summary  # the editor had a new allowance
    assert outcome.usage["editor"].total == 2000 + 2 * 210
    assert (shapes / "area.py").read_text() == AREA
    told = first_user(requests_of(fake_openai, PLANNER)[1])
    assert "The user's hint: go on with the task" in told


async def test_an_unsigned_team_checkpoint_is_never_continued(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    folder = shapes / ".agent-lsp" / "state" / "team"
    folder.mkdir(parents=True)
    brought = {"task_id": "20260101-000000-abcdef", "instruction": TASK, "phase": "FAILED"}
    (folder / "20260101-000000-abcdef.json").write_text(json.dumps(brought))
    with pytest.raises(AgentLspError, match="ignored: not signed"):
        await proceed(shapes, fake_openai, "20260101-000000-abcdef", HINT)
    session = make_session(shapes, fake_openai.base_url)
    try:
        assert session.team_to_continue() is None  # the single agent's path says why not
        assert session.team_to_continue("20260101") is None
    finally:
        await session.aclose()
    assert not fake_openai.requests


async def test_a_single_agents_newer_stopped_task_is_the_one_continued(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    script_failure(fake_openai)
    failed = await run_team(shapes, fake_openai, options=TeamOptions(workers=1))
    assert failed.phase is Phase.FAILED
    session = make_session(shapes, fake_openai.base_url)
    try:
        cp = Checkpoint(
            task_id="single-1",
            task=Task(kind=TaskKind.TASK, instruction="x"),
            status="finished",
            stop_reason="max steps",
        )
        session.memory.checkpoints.save(cp)  # saved after the team task
        assert session.team_to_continue() is None
        assert session.stopped_task().task_id == "single-1"
        chosen = session.team_to_continue(f"team-{failed.task_id[:12]}")  # named: the team's
        assert chosen is not None and chosen.task_id == failed.task_id
    finally:
        await session.aclose()


def test_run_continue_goes_on_with_a_failed_team_task(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    script_failure(fake_openai)
    failed = agent_lsp("run", "--team", TASK, "--root", str(shapes), env=server_env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"■ team failed: failed in EXECUTING: {S2_FAILED}" in failed.stdout
    assert 'continue: agent-lsp run --continue "your hint" --task ' in failed.stdout

    fake_openai.script_for(step_marker("s3"), *edit_step("perimeter.py", PERIMETER_BODY, "ok"))
    fake_openai.script_for(REVIEWER, review([]))
    done = agent_lsp("run", "--continue", HINT, "--root", str(shapes), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "team: continuing " in done.stdout and f"with the hint: “{HINT}”" in done.stdout
    assert "■ team completed: done: 2 steps (s1, s3); full suite: 2 passed" in done.stdout
    assert "  s2 [replaced] run the perimeter check" in done.stdout
    planners = requests_of(fake_openai, PLANNER)
    assert len(planners) == 2 and f"The user's hint: {HINT}" in first_user(planners[1])
    assert count(fake_openai, step_marker("s1")) == 3  # not run again
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    assert "Traceback" not in done.stderr

    again = agent_lsp("run", "--continue", "more", "--root", str(shapes), env=server_env)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "ended DONE: nothing to continue; start a new task" in again.stderr
    assert not again.stdout
