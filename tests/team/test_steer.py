"""A steer note sent while a team runs (`Session.steer`: what `agentLsp.steer` and `AGENT:`
lines call, from another thread) reaches the role running then at its next request, not a role
that starts later, and is kept in the checkpoint for the planner's later calls; a role's
`ask_user` question reaches the user through its role's channel."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from agent_lsp.team import Phase, TeamStore
from agent_lsp.team.orchestrator import TeamOptions
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.team.conftest import (
    AREA_BODY,
    COMMANDER,
    PERIMETER_BODY,
    PLANNER,
    REVIEWER,
    TWO_STEPS,
    edit_step,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import first_user, make_session, requests_of, run_team, tool_names

NOTE = "NOTE-9: keep the functions one line each"
STEERED = f"A note from the user, sent while you work: {NOTE}"
FINDING = {
    "severity": "warning",
    "file": "area.py",
    "line": 1,
    "category": "style",
    "finding": "square_area has no docstring",
    "suggestion": "add one",
}


async def test_a_steer_note_reaches_the_running_role_and_the_planners_next_call(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    session = make_session(shapes, fake_openai.base_url)
    steered: list[bool] = []
    read, edit, done = edit_step("area.py", AREA_BODY, "area done")

    def read_then_steer(request: dict[str, Any]) -> Reply:  # the user types while s1 runs
        steered.append(session.steer(NOTE))
        return dataclasses.replace(read)

    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        plan_reply(*TWO_STEPS),
        plan_reply({"id": "r1", "goal": "add a docstring to square_area", "files": ["area.py"]}),
    )
    fake_openai.script_for(step_marker("s1"), read_then_steer, edit, done)
    fake_openai.script_for(step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "ok"))
    fake_openai.script_for(step_marker("r1"), *edit_step("area.py", AREA_BODY, "nothing to do")[2:])
    fake_openai.script_for(REVIEWER, review([FINDING]), review([]))
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=1), session=session)
    assert outcome.phase is Phase.DONE, outcome.summary
    assert steered == [True]

    s1 = requests_of(fake_openai, step_marker("s1"))
    said = [[m["content"] for m in r["messages"] if m["role"] == "user"] for r in s1]
    assert STEERED not in said[0] and STEERED in said[1], said  # its next request
    for request in requests_of(fake_openai, step_marker("s2")):  # it started later
        assert NOTE not in str(request["messages"])
    planners = requests_of(fake_openai, PLANNER)
    assert NOTE not in first_user(planners[0])
    assert (
        "## Notes from the user, sent while the team worked (oldest first)\n- " + NOTE
    ) in first_user(planners[-1])
    state = TeamStore(shapes).load(outcome.task_id)
    assert state.notes == [NOTE]
    kept = [(d.kind, d.text) for d in state.decisions]  # the memory role kept it, once
    assert kept.count(("user", f"the user said: {NOTE}")) == 1, kept
    assert f"- user: the user said: {NOTE}" in first_user(planners[-1])
    assert session.control is None  # the team is over: a note now reaches nothing
    assert not session.steer("too late")


async def test_an_editor_asks_the_user_through_its_role_channel(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    channel = RecordingChannel()
    channel.answers = ["side * side"]
    question = {"question": "Which formula for the area?", "options": ["side * side", "2 * side"]}
    read, edit, done = edit_step("area.py", AREA_BODY, "area done")
    ask = Reply(tool_calls=[ToolCall("ask_user", question)], usage=(40, 5))
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(*TWO_STEPS))
    fake_openai.script_for(step_marker("s1"), ask, read, edit, done)
    fake_openai.script_for(step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "ok"))
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=1), channel=channel)
    assert outcome.phase is Phase.DONE, outcome.summary
    assert channel.questions == ["[editor s1] Which formula for the area?"]
    s1 = requests_of(fake_openai, step_marker("s1"))
    assert "ask_user" in tool_names(s1[0]) and "ask_user" in tool_names(
        requests_of(fake_openai, PLANNER)[0]
    )
    answered = [m for m in s1[1]["messages"] if m["role"] == "tool"]
    assert "the user answered: side * side" in answered[-1]["content"]
    reviewer = requests_of(fake_openai, REVIEWER)[0]
    assert "ask_user" not in tool_names(reviewer)  # read-only roles do not ask
