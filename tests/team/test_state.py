"""The team task's checkpoint: transitions checked, written after each, the newest unfinished
task found again, an unreadable checkpoint a clear error and never offered."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent_lsp.errors import AgentLspError
from agent_lsp.memory.layout import Layout
from agent_lsp.team.state import Phase, Step, TeamStore


def test_every_transition_is_written_and_a_wrong_one_refused(tmp_path: Path) -> None:
    store = TeamStore(tmp_path)
    state = store.new("add X")
    store.move(state, Phase.PLANNING)
    state.steps.append(Step(id="s1", goal="add X", files=["x.py"]))
    store.move(state, Phase.EXECUTING)
    saved = json.loads(store.path(state.task_id).read_text())
    assert saved["phase"] == "EXECUTING"
    assert saved["history"] == ["INIT→PLANNING", "PLANNING→EXECUTING"]
    assert saved["steps"][0]["id"] == "s1" and saved["steps"][0]["status"] == "pending"
    with pytest.raises(AgentLspError, match="no transition EXECUTING → DONE"):
        store.move(state, Phase.DONE)
    assert store.pending() == state  # unfinished: what run --resume continues
    store.move(state, Phase.FAILED, "stopped")
    with pytest.raises(AgentLspError, match="already FAILED"):
        store.move(state, Phase.PLANNING)
    assert store.pending() is None
    assert json.loads(store.path(state.task_id).read_text())["reason"] == "stopped"


def test_an_unreadable_checkpoint_is_a_clear_error_and_skipped(tmp_path: Path) -> None:
    store = TeamStore(tmp_path)
    older = store.new("older")
    store.move(older, Phase.PLANNING)
    broken = store.folder / "99999999-999999-ffffff.json"
    broken.write_text("{not json")
    with pytest.raises(AgentLspError, match=r"the team checkpoint 99999999-999999-ffffff\.json is"):
        store.load(broken.stem)
    assert store.pending() == older
    assert broken.read_text() == "{not json"  # nothing lost


def test_a_team_checkpoint_stays_out_of_git(tmp_path: Path) -> None:
    """Checkpoints are the user's machine's state, never shared: a repository that shipped one
    would have it offered as "Resume team task …?" in every clone."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    Layout(tmp_path).mount()
    store = TeamStore(tmp_path)
    store.move(store.new("add X"), Phase.PLANNING)
    status = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout.splitlines() == ["?? .agent-lsp/.gitignore"]
