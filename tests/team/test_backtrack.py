"""Backtracking: a step's result shows an earlier step was wrong, the planner names it, and the
team undoes the finished steps' edits newest first (the bytes before each step, through the
editor channel), at most 3 steps a task before the user is asked; checkpointed, resumable."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agent_lsp.messages import TaskStatus
from agent_lsp.team import Orchestrator, Phase
from agent_lsp.team.orchestrator import TeamOptions
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.records import read_signed
from tests.team.conftest import (
    AREA,
    AREA_BODY,
    AREA_STUB,
    COMMANDER,
    PERIMETER,
    PERIMETER_BODY,
    PERIMETER_STUB,
    PLANNER,
    REVIEWER,
    TASK,
    edit_step,
    locate_marker,
    locate_reply,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import first_user, make_session, requests_of

CAUSE = "square_area adds the side to itself in area.py (step s1); it must multiply"
UNDO_FURTHER, KEEP = "Undo further and re-plan", "Keep and stop"


def go_back(undo: list[str], *steps: dict[str, Any]) -> Reply:
    answer = {"undo": undo, "why": "s1 is wrong", "steps": list(steps)}
    return Reply("Going back:\n```json\n" + json.dumps(answer) + "\n```", usage=(100, 20))


def saved(root: Path, task_id: str) -> dict[str, Any]:
    return read_signed(root / f".agent-lsp/state/team/{task_id}.json", "team")


def statuses(state: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(s["id"], s["status"], s["undone"]) for s in state["steps"]]


async def test_a_testers_root_cause_undoes_the_steps_back_to_the_wrong_one(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    area = {"id": "s1", "goal": "implement square_area", "files": ["area.py"]}
    perimeter = {"id": "s2", "goal": "implement square_perimeter", "files": ["perimeter.py"]}
    test = {"id": "t1", "goal": "test the area", "role": "test", "depends_on": ["s1", "s2"]}
    fix = {"id": "s3", "goal": "square_area multiplies", "files": ["area.py"]}
    again = {"id": "s4", "goal": "implement square_perimeter", "files": ["perimeter.py"]}
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(area, perimeter, test), go_back(["s1"], fix, again))
    for step in ("s1", "s2", "s3", "s4"):
        fake_openai.script_for(locate_marker(step), locate_reply())
    wrong = "    return side + side\n"
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", wrong, "area done"))
    fake_openai.script_for(step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "done"))
    fake_openai.script_for(
        step_marker("t1"),
        Reply(tool_calls=[ToolCall("run_tests", {"targets": ["tests/test_area.py"]})]),
        Reply(CAUSE),
    )
    fake_openai.script_for(step_marker("s3"), *edit_step("area.py", AREA_BODY, "multiplied"))
    fake_openai.script_for(step_marker("s4"), *edit_step("perimeter.py", PERIMETER_BODY, "done"))
    fake_openai.script_for(REVIEWER, review([]))
    session = make_session(shapes, fake_openai.base_url)
    channel = RecordingChannel()
    try:
        outcome = await Orchestrator(session, channel, TeamOptions(workers=1)).run(TASK)
    finally:
        await session.aclose()

    assert outcome.phase is Phase.DONE and outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert outcome.verified and "full suite: 2 passed" in outcome.summary
    assert (shapes / "area.py").read_text() == AREA
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    # the undo went through the editor channel, newest first, back to the bytes before each
    undos = [(p.name, text, label) for p, text, label in channel.edits if "undo" in label]
    assert undos == [
        ("perimeter.py", PERIMETER_STUB, "agent-lsp: undo step 2"),
        ("area.py", AREA_STUB, "agent-lsp: undo step 1"),
    ]
    # the planner was told what it may go back over
    replan = first_user(requests_of(fake_openai, PLANNER)[1])
    assert CAUSE in replan
    assert "Finished steps that changed files: s1 implement square_area; s2 implement" in replan
    assert '{"undo": ["s1"]' in replan
    state = saved(shapes, outcome.task_id)
    assert statuses(state) == [
        ("s1", "replaced", True),
        ("s2", "replaced", True),
        ("t1", "replaced", False),
        ("s3", "done", False),
        ("s4", "done", False),
    ]
    assert state["steps"][0]["note"] == "undone: s1 is wrong"
    assert state["undone_steps"] == 2 and state["backtrack"] == ""
    assert state["history"][2:5] == [
        "EXECUTING→PLANNING",
        "PLANNING→EXECUTING",
        "EXECUTING→VERIFYING",
    ]
    messages = [e.message for e in channel.events]
    assert "team: undid s2 (s1 is wrong)" in messages and "team: undid s1 (s1 is wrong)" in messages


def four_files(tmp_path: Path) -> Path:
    root = tmp_path / "plain"  # no test runner
    root.mkdir()
    for name in "abcd":
        (root / f"{name}.txt").write_text(f"{name} old\n")
    return root


def script_four(fake: FakeOpenAIServer, answer_steps: int = 1) -> None:
    steps = [
        {"id": f"s{i}", "goal": f"update {n}.txt", "files": [f"{n}.txt"]}
        | ({"depends_on": [f"s{i - 1}"]} if i > 1 else {})
        for i, n in enumerate("abcd", 1)
    ]
    test = {"id": "t1", "goal": "check the files", "role": "test", "depends_on": ["s4"]}
    fix = {"id": "r1", "goal": "update a.txt right", "files": ["a.txt"]}
    fake.script_for(COMMANDER, record_reply())
    fake.script_for(PLANNER, plan_reply(*steps, test), go_back(["s1"], fix))
    for i, n in enumerate("abcd", 1):
        fake.script_for(locate_marker(f"s{i}"), locate_reply())
        edit = {"path": f"{n}.txt", "old_text": f"{n} old\n", "new_text": f"{n} new\n"}
        fake.script_for(
            step_marker(f"s{i}"),
            Reply(tool_calls=[ToolCall("read_file", {"path": f"{n}.txt"})]),
            Reply(tool_calls=[ToolCall("edit_file", edit)]),
            Reply("updated"),
        )
    fake.script_for(step_marker("t1"), Reply("s1 wrote the wrong value into a.txt"))
    fake.script_for(locate_marker("r1"), locate_reply())
    edit = {"path": "a.txt", "old_text": "a old\n", "new_text": "a right\n"}
    fake.script_for(
        step_marker("r1"),
        Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt"})]),
        Reply(tool_calls=[ToolCall("edit_file", edit)]),
        Reply("fixed"),
    )
    fake.script_for(REVIEWER, review([]))


QUESTION = (
    "team: going back needs undoing s1 too; 3 steps are undone already (the limit is 3). "
    "Undo further and re-plan, or keep the edits and stop?"
)


async def test_past_three_undone_steps_the_user_is_asked_and_no_answer_stops(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = four_files(tmp_path)
    script_four(fake_openai)
    session = make_session(root, fake_openai.base_url)
    channel = RecordingChannel()  # asked, it gets no answer (a CLI without a terminal)
    try:
        outcome = await Orchestrator(session, channel, TeamOptions(workers=1)).run(TASK)
        kept = (root / "a.txt").read_text()
        # the user's own undo reverts the rest from the same record (`agent-lsp undo --task`)
        report = await session.undo(RecordingChannel(), None, f"team-{outcome.task_id}")
    finally:
        await session.aclose()

    assert kept == "a new\n" and (root / "a.txt").read_text() == "a old\n"
    assert report.steps == [1] and report.restored == ["a.txt"]
    assert outcome.phase is Phase.FAILED, outcome.summary
    assert channel.questions == [QUESTION]
    assert channel.options == [[UNDO_FURTHER, KEEP]]
    assert "going back past 3 undone steps (s1) needs the user: no answer; the edits are kept" in (
        outcome.summary
    )
    # s4, s3, s2 undone to their bytes before; s1's edit was kept (`kept`): nothing lost
    texts = {n: (root / f"{n}.txt").read_text() for n in "bcd"}
    assert texts == {"b": "b old\n", "c": "c old\n", "d": "d old\n"}
    state = saved(root, outcome.task_id)
    assert statuses(state)[:4] == [
        ("s1", "done", False),
        ("s2", "replaced", True),
        ("s3", "replaced", True),
        ("s4", "replaced", True),
    ]
    assert state["undone_steps"] == 3 and state["phase"] == "FAILED"
    # the team's undo record: the single agent's checkpoint format (`agent-lsp undo --task`)
    record = read_signed(
        root / f".agent-lsp/checkpoints/team-{outcome.task_id}/progress.json", "checkpoint"
    )
    assert [(r["step"], r["undone"]) for r in record["steps"]] == [
        (1, True),
        (2, True),
        (3, True),
        (4, True),
    ]


async def test_a_task_cut_short_while_asking_resumes_and_undoes_further(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = four_files(tmp_path)
    script_four(fake_openai)
    session = make_session(root, fake_openai.base_url)
    channel = RecordingChannel()
    channel.silent = True  # the user is away: the server is stopped while it asks
    try:
        job = asyncio.create_task(Orchestrator(session, channel, TeamOptions(workers=1)).run(TASK))
        for _ in range(600):
            if channel.questions:
                break
            await asyncio.sleep(0.05)
        job.cancel()
        await asyncio.gather(job, return_exceptions=True)
        cut = read_signed(next((root / ".agent-lsp/state/team").glob("*.json")), "team")
        assert cut["phase"] == "PLANNING" and cut["backtrack"] and cut["undone_steps"] == 3
        channel.silent = False
        channel.answers.append(UNDO_FURTHER)
        outcome = await Orchestrator(session, channel, TeamOptions(workers=1)).resume()
    finally:
        await session.aclose()

    assert outcome.phase is Phase.DONE, outcome.summary
    assert channel.questions == [QUESTION, QUESTION]
    assert len(requests_of(fake_openai, "[team role: planner]")) == 2  # not planned a third time
    texts = {n: (root / f"{n}.txt").read_text() for n in "abcd"}
    assert texts == {"a": "a right\n", "b": "b old\n", "c": "c old\n", "d": "d old\n"}
    state = saved(root, outcome.task_id)
    assert statuses(state) == [
        ("s1", "replaced", True),
        ("s2", "replaced", True),
        ("s3", "replaced", True),
        ("s4", "replaced", True),
        ("t1", "replaced", False),
        ("r1", "done", False),
    ]
    assert state["undone_steps"] == 4 and state["undo_allowed"] == 4
