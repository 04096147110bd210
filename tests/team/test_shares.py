"""`team.shares`: each role's percent of a team task's token budget, from the settings; a bad
value (an unknown role, shares over 100%) is a clear settings warning, never a crash."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.config.schema import TEAM_SHARES, Settings
from agent_lsp.config.settings import load_settings
from agent_lsp.team.budget import Budget
from tests.team.test_settings import project_config


def _loaded(root: Path, tmp_path: Path, text: str) -> tuple[Settings, list[str]]:
    root.mkdir(exist_ok=True)
    project_config(root, text)
    loaded = load_settings(root, environ={}, user_config=tmp_path / "none.toml")
    return loaded.settings, loaded.warnings


def test_the_default_shares_are_the_roles_parts(tmp_path: Path) -> None:
    settings, warnings = _loaded(tmp_path / "p", tmp_path, "")
    assert warnings == []
    assert settings.team.shares == TEAM_SHARES
    budget = Budget(10_000, 60.0, shares=settings.team.shares)
    assert budget.left == {
        "commander": 500,
        "planner": 1500,
        "retriever": 500,
        "editor": 4000,
        "executor": 500,
        "tester": 1000,
        "reviewer": 2000,
    }


def test_shares_from_the_project_config_split_the_budget(tmp_path: Path) -> None:
    settings, warnings = _loaded(
        tmp_path / "p", tmp_path, "[team]\nshares = { editor = 30, reviewer = 10 }\n"
    )
    assert warnings == []
    assert settings.team.shares == {**TEAM_SHARES, "editor": 30, "reviewer": 10}
    budget = Budget(10_000, 60.0, shares=settings.team.shares)
    assert budget.left["editor"] == 3000 and budget.left["reviewer"] == 1000
    assert budget.left["planner"] == 1500  # not named: its default
    assert budget.reserve("editor", 2) == 1500  # two workers split the editor's part


def test_an_unknown_role_is_a_settings_warning_and_the_defaults_stay(tmp_path: Path) -> None:
    settings, warnings = _loaded(tmp_path / "p", tmp_path, "[team]\nshares = { painter = 5 }\n")
    assert len(warnings) == 1, warnings
    assert "team.shares" in warnings[0] and "unknown role painter" in warnings[0]
    assert "commander, planner, retriever, editor, executor, tester, reviewer" in warnings[0]
    assert settings.team.shares == TEAM_SHARES


def test_shares_over_a_hundred_percent_are_a_settings_warning(tmp_path: Path) -> None:
    settings, warnings = _loaded(tmp_path / "p", tmp_path, "[team]\nshares = { editor = 50 }\n")
    assert len(warnings) == 1, warnings
    assert "team.shares" in warnings[0] and "sum to 110%, over 100%" in warnings[0]
    assert settings.team.shares == TEAM_SHARES


def test_a_share_that_is_not_a_number_is_a_settings_warning(tmp_path: Path) -> None:
    settings, warnings = _loaded(
        tmp_path / "p", tmp_path, '[team]\nshares = { editor = "most" }\nworkers = 3\n'
    )
    assert len(warnings) == 1 and "team.shares" in warnings[0], warnings
    assert settings.team.shares == TEAM_SHARES
    assert settings.team.workers == 3  # the rest of the file still applies
