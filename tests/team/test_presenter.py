"""The team's progress: terse shows the milestones only (phases, the plan, each role run
done or failed with the tokens per role so far), verbose every step of every role too; each
line names the role and the step."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.team import Phase
from agent_lsp.team.orchestrator import TeamOptions
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer
from tests.team.conftest import (
    COMMANDER,
    PLANNER,
    REVIEWER,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import edit_replies, run_team

NOTES = "mark the notes done"


def script(fake: FakeOpenAIServer) -> None:
    fake.script_for(COMMANDER, record_reply(goal=NOTES, modules=["notes.txt"]))
    fake.script_for(PLANNER, plan_reply({"id": "s1", "goal": NOTES, "files": ["notes.txt"]}))
    fake.script_for(
        step_marker("s1"),
        *edit_replies("notes.txt", "todo\n", "done\n", "marked", usage=True),
    )
    fake.script_for(REVIEWER, review([]))


async def run(root: Path, fake: FakeOpenAIServer, verbose: bool) -> list[str]:
    script(fake)
    channel = RecordingChannel()
    outcome = await run_team(
        root, fake, NOTES, options=TeamOptions(verbose=verbose), channel=channel
    )
    assert outcome.phase is Phase.DONE, outcome.summary
    return [e.message for e in channel.events]


async def test_terse_progress_is_the_milestones_naming_role_and_step(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = tmp_path / "plain"  # no test runner: no suite
    root.mkdir()
    (root / "notes.txt").write_text("todo\n")
    assert await run(root, fake_openai, verbose=False) == [
        "team: PLANNING",
        "team: commander completed (35 tokens); so far commander 35 tokens",
        "team: task record: feature, code problem",
        "team: planner completed (120 tokens); so far commander 35, planner 120 tokens",
        f"team: plan: s1 {NOTES}",
        "team: EXECUTING",
        "editor s1: notes.txt +1 \u22121",  # the write's preview, one line
        "team: editor s1 completed (210 tokens); so far commander 35, planner 120, "
        "editor 210 tokens",
        "team: VERIFYING",
        "team: REVIEWING (no test runner found: not verified)",
        "team: reviewer completed (90 tokens); so far commander 35, planner 120, editor 210, "
        "reviewer 90 tokens",
        "team: DONE",
    ]


async def test_verbose_progress_shows_every_step_of_every_role(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "notes.txt").write_text("todo\n")
    messages = await run(root, fake_openai, verbose=True)
    worker = [m for m in messages if m.startswith("[editor s1] ")]
    assert any("read_file" in m for m in worker) and any("edit_file" in m for m in worker)
    assert any(m.startswith("[planner] ") for m in messages)
    assert any(m.startswith("[reviewer] ") for m in messages)
    assert any(m.startswith("team: editor s1 completed (210 tokens); so far") for m in messages)
    assert messages[-1] == "team: DONE"
