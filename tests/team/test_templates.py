"""The planner's first message: the template of the record's type and the record, not the
raw README; a bug fix and a refactor get different stages."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_lsp.team.record import TaskType
from agent_lsp.team.templates import TEMPLATES
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.team.conftest import COMMANDER, PLANNER, record_reply
from tests.team.helpers import first_user, requests_of, run_team

BUG_STAGES = (
    "1. locate the error — done when the failing line and the symptom are named\n"
    "2. trace the call chain"
)
REFACTOR_STAGES = (
    "1. map the structure — done when the modules and what each owns are listed\n"
    "2. find the couplings"
)


@pytest.mark.parametrize(
    ("kind", "mine", "not_mine"),
    [
        ("bug fix", BUG_STAGES, "map the structure"),
        ("refactor", REFACTOR_STAGES, "trace the call chain"),
    ],
)
async def test_the_planner_is_given_the_template_of_the_records_type(
    shapes: Path, fake_openai: FakeOpenAIServer, kind: str, mine: str, not_mine: str
) -> None:
    (shapes / "README.md").write_text("# shapes\n\nA README SENTENCE.\n")
    fake_openai.script_for(
        COMMANDER, record_reply(type=kind, goal="the goal", constraints=["keep the API"])
    )
    fake_openai.script_for(PLANNER, Reply("no plan"))  # the task stops after planning
    await run_team(shapes, fake_openai, "the user's words")
    told = first_user(requests_of(fake_openai, PLANNER)[0])
    assert "## The template of this type of task\n" in told
    assert mine in told and not_mine not in told
    assert "## The task record\ntype: " in told and "constraints: keep the API" in told
    assert "the user's words: the user's words" in told
    assert "A README SENTENCE." in first_user(requests_of(fake_openai, COMMANDER)[0])
    assert "A README SENTENCE." not in told


def test_every_type_has_a_template() -> None:
    assert set(TEMPLATES) == set(TaskType)
    assert [s for s, _ in TEMPLATES[TaskType.BUG_FIX]] == [
        "locate the error",
        "trace the call chain",
        "reproduce",
        "fix",
        "add a test",
    ]
    assert [s for s, _ in TEMPLATES[TaskType.REFACTOR]] == [
        "map the structure",
        "find the couplings",
        "rewrite module by module",
        "tests",
        "full regression",
    ]
