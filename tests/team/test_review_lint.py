"""REVIEWING runs the project's linter where the project configures one (here ruff, by its
`ruff.toml`): the linter's error on a line the team added (an undefined name) is a finding the
planner gets, even when the reviewer model answers `[]`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agent_lsp.messages import TaskStatus
from agent_lsp.team import Orchestrator, Phase
from agent_lsp.team.orchestrator import TeamOptions
from tests.conftest import which_or_skip
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer
from tests.records import read_signed
from tests.team.conftest import (
    COMMANDER,
    PLANNER,
    REVIEWER,
    TASK,
    locate_marker,
    locate_reply,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import edit_replies, first_user, git_repo, make_session, requests_of

OLD = "def total(xs):\n    return 0\n"
BROKEN = "def total(xs):\n    return sum(xs) + offset\n"


async def test_the_linters_error_is_a_finding_though_the_model_answers_nothing(
    tmp_path: Path, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ruff comes with the dev install, beside this interpreter (not on PATH in a bare venv)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    which_or_skip("ruff")
    root = tmp_path / "calc"
    root.mkdir()
    (root / "ruff.toml").write_text('[lint]\nselect = ["E", "F"]\n')
    (root / "calc.py").write_text(OLD)
    git_repo(root)
    fake_openai.script_for(COMMANDER, record_reply(modules=["calc.py"]))
    step = {"id": "s1", "goal": "sum the numbers", "files": ["calc.py"]}
    fake_openai.script_for(PLANNER, plan_reply(step))
    fake_openai.script_for(locate_marker("s1"), locate_reply())
    fake_openai.script_for(
        step_marker("s1"),
        *edit_replies("calc.py", "    return 0\n", "    return sum(xs) + offset\n", "summed"),
    )
    fake_openai.script_for(REVIEWER, review([]))  # the model sees nothing wrong
    session = make_session(root, fake_openai.base_url)
    try:
        outcome = await Orchestrator(session, RecordingChannel(), TeamOptions(review_rounds=0)).run(
            TASK
        )
    finally:
        await session.aclose()

    assert outcome.phase is Phase.FAILED and outcome.status is TaskStatus.FAILED
    assert (root / "calc.py").read_text() == BROKEN  # nothing lost: the step's text stays
    # the reviewer was shown the linter's finding among the checks
    reviewer = first_user(requests_of(fake_openai, REVIEWER)[0])
    checks = reviewer.split("## Findings of the checks")[1]
    assert "error calc.py:2 [lint] ruff F821: Undefined name `offset`" in checks, checks
    # and it is an open finding though the model answered []
    saved = read_signed(root / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert len(saved["findings"]) == 1, saved["findings"]
    assert saved["findings"][0].startswith("error calc.py:2 [lint] ruff F821")
    assert (
        "review round limit (0) reached; open: error calc.py:2 [lint] ruff F821"
        in (saved["reason"])
    )
