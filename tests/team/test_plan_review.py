"""After every 5 finished steps the planner is shown the plan's state and may revise the
pending steps; the replaced ones never run."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.team import Phase
from agent_lsp.team.orchestrator import TeamOptions
from tests.fakes.openai_server import FakeOpenAIServer
from tests.records import read_signed
from tests.team.conftest import (
    AREA,
    COMMANDER,
    PERIMETER,
    PLANNER,
    REVIEWER,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import first_user, requests_of, run_team
from tests.team.test_step_roles import run


async def test_after_five_steps_the_planner_revises_the_pending_steps(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    (shapes / "area.py").write_text(AREA)
    (shapes / "perimeter.py").write_text(PERIMETER)
    steps = [
        {"id": f"s{n}", "goal": f"check {n}", "role": "run", "depends_on": [f"s{n - 1}"]}
        for n in range(1, 8)
    ]
    steps[0]["depends_on"] = []
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        plan_reply(*steps),
        plan_reply({"id": "s8", "goal": "check the perimeter", "role": "run"}),
    )
    for n in range(1, 6):
        fake_openai.script_for(step_marker(f"s{n}"), *run("ls area.py", f"listed {n}"))
    fake_openai.script_for(step_marker("s8"), *run("ls perimeter.py", "listed the perimeter"))
    fake_openai.script_for(REVIEWER, review([]))
    options = TeamOptions(workers=1)
    outcome = await run_team(shapes, fake_openai, options=options)

    assert outcome.phase is Phase.DONE, outcome.summary
    assert [(s.id, s.status.value) for s in outcome.steps] == [
        *[(f"s{n}", "done") for n in range(1, 6)],
        ("s6", "replaced"),
        ("s7", "replaced"),
        ("s8", "done"),
    ]
    planner = requests_of(fake_openai, PLANNER)
    assert len(planner) == 2
    reviewed = first_user(planner[1])
    assert (
        "## The plan so far (a plan review)\ns1 [done] (run) check 1 — exit code 0: listed 1"
        in (reviewed)
    )
    assert "s6 [pending] (run) check 6\ns7 [pending] (run) check 7\n" in reviewed
    assert "The plan so far" not in first_user(planner[0])
    assert not requests_of(fake_openai, step_marker("s6"))
    assert not requests_of(fake_openai, step_marker("s7"))
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["plan_reviews"] == 1
