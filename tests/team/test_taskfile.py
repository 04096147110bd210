"""A team task leaves the record a single task does: `current-task.md` with the team's plan and
progress (every step, its role and status, rewritten as steps finish; the outcome at the end),
and, after a key event (here: a review's finding planned and fixed), an experience distilled
from every role's calls — not when `memory.distill` is off, nor without a key event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_lsp.config.schema import Settings
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.session import Session
from agent_lsp.team import Phase
from agent_lsp.team.orchestrator import TeamOptions
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.team.conftest import (
    AREA_BODY,
    COMMANDER,
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
from tests.team.helpers import edit_replies, first_user, run_team, script_feature

DISTIL = "You distil a finished coding task"
DOCSTRING = '    """The area of a square."""\n'
FINDING = {
    "severity": "warning",
    "file": "area.py",
    "line": 1,
    "category": "style",
    "finding": "square_area has no docstring",
    "suggestion": "add one",
}
EXPERIENCE = {
    "topic": "square stubs with a review round",
    "tags": ["team", "review"],
    "symbols": ["square_area"],
    "goal": "implement the square functions",
    "steps": ["implemented both", "added the docstring the review asked for"],
    "key_decisions": ["docstrings on public functions - the reviewer asks for them"],
    "pitfalls": [],
    "open_questions": [],
}


def session_with(root: Path, base_url: str, distill: bool) -> Session:
    settings = Settings.model_validate(
        {
            "model": {
                "baseUrl": base_url,
                "name": "fake-model",
                "apiKey": "test-key",
                "maxRetries": 0,
                "timeout": 20,
            },
            "memory": {"distill": distill},
        }
    )
    return Session(root, settings, OpenAICompatModel(settings.model))


def task_file(root: Path) -> str:
    return (root / ".agent-lsp" / "state" / "task" / "current-task.md").read_text()


def script_review_round(fake: FakeOpenAIServer, root: Path, seen: list[str]) -> None:
    """Two steps, a review finding planned as r1 and fixed, a clean review; `seen` gets the
    task file as it is when the reviewer is first asked."""

    def first_review(request: dict[str, Any]) -> Reply:
        seen.append(task_file(root))
        return review([FINDING])

    fake.script_for(COMMANDER, record_reply())
    fake.script_for(
        PLANNER,
        plan_reply(*TWO_STEPS),
        plan_reply({"id": "r1", "goal": "add a docstring to square_area", "files": ["area.py"]}),
    )
    fake.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake.script_for(step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done"))
    fake.script_for(
        step_marker("r1"),
        *edit_replies("area.py", AREA_BODY, DOCSTRING + AREA_BODY, "docstring added"),
    )
    fake.script_for(REVIEWER, first_review, review([]))
    fake.script_for(DISTIL, Reply(json.dumps(EXPERIENCE), usage=(300, 60)))


def distil_requests(fake: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [
        r
        for r in fake.requests
        if any(DISTIL in (m.get("content") or "") for m in r["messages"] if m["role"] == "system")
    ]


async def test_the_plan_and_progress_are_kept_and_an_experience_is_distilled(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    seen: list[str] = []
    script_review_round(fake_openai, shapes, seen)
    session = session_with(shapes, fake_openai.base_url, distill=True)
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=2), session=session)
    assert outcome.phase is Phase.DONE, outcome.summary

    # while the task ran: both steps done, the reviewer's turn
    [during] = seen
    assert "phase: REVIEWING" in during, during
    assert "- s1 [done] implement square_area (editor): area done" in during, during
    assert "- s2 [done] implement square_perimeter (editor): perimeter done" in during, during
    assert "## outcome" not in during
    # at the end: the whole plan, the fix step, the outcome
    final = task_file(shapes)
    assert final.startswith("# Current task\n"), final
    assert f"## goal\n{TASK}" in final, final
    assert "The task record: feature, a code problem: implement the two stubs" in final
    assert "phase: DONE (review round 1)" in final, final
    assert "- r1 [done] add a docstring to square_area (editor): docstring added" in final
    outcome_line = final.split("## outcome\n")[1].splitlines()[0]
    head, files = outcome_line.split("; files changed: ")
    assert head == "completed (team DONE)" and set(files.split(", ")) == {"area.py", "perimeter.py"}
    meta = json.loads((shapes / ".agent-lsp" / "state" / "task" / "task.json").read_text())
    assert meta["task_id"] == f"team-{outcome.task_id}" and meta["status"] == "completed"

    # the experience: one model call over every role's calls, then the file
    [request] = distil_requests(fake_openai)
    transcript = first_user(request)
    assert f"Task: {TASK}"[:40] in transcript, transcript
    assert "[editor s1] completed: area done" in transcript, transcript
    assert "[reviewer] completed" in transcript, transcript
    assert "call edit_file" in transcript, transcript
    [experience] = list((shapes / ".agent-lsp" / "memory").glob("*.md"))
    text = experience.read_text()
    assert "- event: fail-fix-pass" in text, text
    assert "docstrings on public functions" in text, text


async def test_no_experience_when_distillation_is_off(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    seen: list[str] = []
    script_review_round(fake_openai, shapes, seen)
    session = session_with(shapes, fake_openai.base_url, distill=False)
    outcome = await run_team(shapes, fake_openai, session=session)
    assert outcome.phase is Phase.DONE, outcome.summary
    assert distil_requests(fake_openai) == []
    assert not (shapes / ".agent-lsp" / "memory").is_dir() or not list(
        (shapes / ".agent-lsp" / "memory").glob("*.md")
    )
    assert "## outcome\ncompleted" in task_file(shapes)


async def test_no_experience_without_a_key_event(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    script_feature(fake_openai)
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.DONE, outcome.summary
    assert distil_requests(fake_openai) == []
    assert "- s2 [done]" in task_file(shapes)
