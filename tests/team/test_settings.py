"""The `team` settings from the project's `.agent-lsp/config.toml`: `team.enabled` makes
`agent-lsp run "…"` a team task; `team.workers` and `team.reviewRounds` shape it."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.config.settings import load_settings
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.session import Session
from agent_lsp.team import Phase
from tests.fakes.openai_server import FakeOpenAIServer
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
from tests.team.helpers import edit_replies, first_user, requests_of, run_team
from tests.test_cli import agent_lsp


def project_config(root: Path, text: str) -> None:
    (root / ".agent-lsp").mkdir(exist_ok=True)
    (root / ".agent-lsp" / "config.toml").write_text(text)


async def test_workers_and_review_rounds_come_from_the_project_config(
    shapes: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    project_config(shapes, "[team]\nworkers = 1\nreviewRounds = 0\n")
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(*TWO_STEPS))
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake_openai.script_for(
        step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done")
    )
    finding = {"severity": "warning", "file": "area.py", "finding": "no docstring"}
    fake_openai.script_for(REVIEWER, review([finding]))
    environ = {"AGENT_LSP_BASE_URL": fake_openai.base_url, "AGENT_LSP_API_KEY": "test-key"}
    loaded = load_settings(shapes, environ=environ, user_config=tmp_path / "none.toml")
    assert loaded.warnings == []
    settings = loaded.settings.model_copy(
        update={"model": loaded.settings.model.model_copy(update={"max_retries": 0})}
    )
    session = Session(shapes, settings, OpenAICompatModel(settings.model))
    outcome = await run_team(shapes, fake_openai, session=session)
    # reviewRounds = 0: the first finding ends the task
    assert outcome.phase is Phase.FAILED
    assert "review round limit (0) reached; open: warning area.py [style] no docstring" in (
        outcome.summary
    )
    # workers = 1: s2's first request came after s1's last
    order = [first_user(r) for r in fake_openai.requests]
    first_s2 = next(i for i, t in enumerate(order) if step_marker("s2") in t)
    last_s1 = max(i for i, t in enumerate(order) if step_marker("s1") in t)
    assert last_s1 < first_s2
    assert len(requests_of(fake_openai, PLANNER)) == 1


def test_team_enabled_in_the_project_config_makes_run_a_team_task(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("todo\n")
    project_config(folder, "[team]\nenabled = true\n")
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "mark the notes done", "files": ["notes.txt"]})
    )
    fake_openai.script_for(
        step_marker("s1"),
        *edit_replies("notes.txt", "todo\n", "done\n", "marked"),
    )
    fake_openai.script_for(REVIEWER, review([]))
    done = agent_lsp("run", "mark the notes done", "--root", str(folder), env=server_env)
    assert done.returncode == 3, done.stdout + done.stderr  # done, no test runner: unverified
    assert "■ team completed: done: 1 steps (s1); no test runner found: not verified" in done.stdout
    assert (folder / "notes.txt").read_text() == "done\n"
    assert [first_user(r).splitlines()[0] for r in fake_openai.requests] == [
        COMMANDER,
        PLANNER,
        *["[team role: editor]"] * 3,  # notes.txt is small: no retriever call
        REVIEWER,
    ]
    assert "Traceback" not in done.stderr
