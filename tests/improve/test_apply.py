"""Improvements applied to real project files: the guard refuses what an improvement may never
touch, the self-check on a copy rolls back (every byte as it was), the log keeps before and
after, and a revert restores one change only while its after-state is still there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_lsp.config.schema import Settings
from agent_lsp.config.settings import load_settings
from agent_lsp.improve import (
    ImprovementError,
    ImprovementPatch,
    apply_improvement,
    list_improvements,
    revert_improvement,
)
from tests.records import read_signed

CONFIG = """\
# our own comment, kept byte for byte when nothing is applied
[tests]
runOnSave = false   # off here
timeout = 90

[compaction]
task = 0.7
"""


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / ".agent-lsp").rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def user_config(tmp_path: Path) -> Path:
    return tmp_path / "user-config.toml"  # absent: the defaults are the user's own


def settings_of(root: Path, user_config: Path) -> Settings:
    return load_settings(root, environ={}, user_config=user_config, trusted=True).settings


def patch(**fields: Any) -> ImprovementPatch:
    return ImprovementPatch.model_validate({"summary": "test change", **fields})


async def apply(
    root: Path, user_config: Path, the_patch: ImprovementPatch, trusted: bool = True
) -> Any:
    return await apply_improvement(
        root,
        the_patch,
        "the user's request",
        settings_of(root, user_config),
        trusted=trusted,
        user_config=user_config,
        environ={},
    )


@pytest.fixture
def configured(project: Path) -> Path:
    (project / ".agent-lsp").mkdir(exist_ok=True)
    (project / ".agent-lsp" / "config.toml").write_text(CONFIG)
    return project


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("permissionLevel", "L3", "the permission level is yours to set"),
        ("permission_level", "L0", "the permission level is yours to set"),
        ("model.baseUrl", "http://evil.example/v1", "the model and its endpoint"),
        ("model.name", "other", "the model and its endpoint"),
        ("sandbox.enabled", False, "the sandbox settings are yours to set"),
        ("sandbox.passEnv", ["AWS_SECRET"], "the sandbox settings are yours to set"),
        ("extraRoots", ["/"], "the folders tools may reach are yours to set"),
        ("policy.allow", ["rm -rf"], "permission rules (.agent-lsp/policy.toml)"),
        ("trust", True, "trust is given only by you"),
        ("tests.runOnSave", True, "True would widen it (now False)"),
        ("lint.enabled", True, "True would widen it (now False)"),
        ("applyMode", "direct", None),  # review -> direct widens: set below
        ("tests.nope", 1, "not a setting"),
        ("memory.distill", None, "removing it could widen what it allows"),
    ],
)
async def test_a_refused_patch_leaves_every_byte_as_it_was(
    configured: Path, user_config: Path, key: str, value: Any, reason: str | None
) -> None:
    if key == "applyMode":
        user_config.write_text('applyMode = "review"\n')
        reason = "'direct' would widen it (now 'review')"
    before = snapshot(configured)
    with pytest.raises(ImprovementError) as err:
        await apply(configured, user_config, patch(config=[{"key": key, "value": value}]))
    assert str(err.value).startswith("refused: ")
    assert reason in str(err.value)
    assert snapshot(configured) == before
    assert not (configured / ".agent-lsp" / "improvements").exists()


async def test_an_applied_change_is_in_the_file_and_logged(
    configured: Path, user_config: Path
) -> None:
    the_patch = patch(
        config=[
            {"key": "compaction.task", "value": 0.5},
            {"key": "tests.runOnSave", "value": False},
        ]
    )
    record = await apply(configured, user_config, the_patch)
    config = configured / ".agent-lsp" / "config.toml"
    assert config.read_text() == CONFIG.replace("task = 0.7", "task = 0.5")  # comments kept
    assert settings_of(configured, user_config).compaction.task == 0.5
    logged = read_signed(
        configured / ".agent-lsp" / "improvements" / f"{record.id}.json", "improvement"
    )
    assert logged["request"] == "the user's request"
    assert logged["files"] == [
        {"path": ".agent-lsp/config.toml", "before": CONFIG, "after": config.read_text()}
    ]
    assert logged["time"] and logged["reverted"] is None
    assert logged["checked"][:2] == [
        "settings reload and validate",
        "tool schemas build with the notes",
    ]
    assert logged["checked"][2].startswith("dry run of the tests (pytest): 1 passed, 1 failed")
    assert [r.id for r in list_improvements(configured)] == [record.id]


async def test_a_self_check_failure_rolls_back_byte_for_byte(
    configured: Path, user_config: Path
) -> None:
    before = snapshot(configured)
    # a timeout no test run survives: the dry run of the tests with it does not run
    with pytest.raises(ImprovementError) as err:
        await apply(
            configured, user_config, patch(config=[{"key": "tests.timeout", "value": 0.001}])
        )
    assert str(err.value).startswith(
        "rolled back, nothing changed: the dry run of the tests did not run:"
    )
    assert "(timed out)" in str(err.value)
    assert snapshot(configured) == before


async def test_a_test_setting_is_dry_run_through_the_real_runner(
    configured: Path, user_config: Path
) -> None:
    record = await apply(
        configured, user_config, patch(config=[{"key": "tests.timeout", "value": 120}])
    )
    assert record.checked[-1].startswith("dry run of the tests (pytest): 1 passed, 1 failed")
    assert "timeout = 120\n" in (configured / ".agent-lsp" / "config.toml").read_text()


async def test_a_tool_note_for_no_tool_is_rolled_back(configured: Path, user_config: Path) -> None:
    (configured / ".agent-lsp" / "tool-notes.toml").write_text('run_tests = "old note"\n')
    before = snapshot(configured)
    with pytest.raises(ImprovementError) as err:
        await apply(
            configured, user_config, patch(tool_notes=[{"tool": "run_test", "note": "typo"}])
        )
    assert "tool-notes.toml names no tool run_test" in str(err.value)
    assert snapshot(configured) == before


async def test_an_invalid_value_is_rolled_back(configured: Path, user_config: Path) -> None:
    before = snapshot(configured)
    with pytest.raises(ImprovementError) as err:
        await apply(configured, user_config, patch(config=[{"key": "compaction.task", "value": 3}]))
    assert "the settings do not load as written" in str(err.value)
    assert "compaction.task" in str(err.value)
    assert snapshot(configured) == before


async def test_notes_in_an_untrusted_workspace_are_refused(
    configured: Path, user_config: Path
) -> None:
    before = snapshot(configured)
    with pytest.raises(ImprovementError) as err:
        await apply(configured, user_config, patch(prompt_note="Be brief."), trusted=False)
    assert "project notes are used only in a trusted workspace" in str(err.value)
    assert snapshot(configured) == before


async def test_revert_restores_one_change_only_while_its_after_state_holds(
    configured: Path, user_config: Path
) -> None:
    original = snapshot(configured)
    first = await apply(configured, user_config, patch(prompt_note="Run pytest with -q."))
    second = await apply(configured, user_config, patch(config=[{"key": "maxSteps", "value": 40}]))
    notes = configured / ".agent-lsp" / "prompt-notes.md"
    assert notes.read_text() == "Run pytest with -q.\n"
    reverted = revert_improvement(configured, first.id)
    assert reverted.reverted
    assert not notes.exists()
    with pytest.raises(ImprovementError, match="already reverted"):
        revert_improvement(configured, first.id)
    config = configured / ".agent-lsp" / "config.toml"
    config.write_text(config.read_text() + "maxTokens = 5000\n")  # edited by hand since
    edited = snapshot(configured)
    with pytest.raises(ImprovementError) as err:
        revert_improvement(configured, second.id)
    assert f".agent-lsp/config.toml changed since {second.id} was applied" in str(err.value)
    assert snapshot(configured) == edited
    config.write_text(second.files[0].after or "")
    revert_improvement(configured, second.id)
    after = snapshot(configured)
    assert {k: v for k, v in after.items() if "/improvements/" not in k} == original


async def test_a_problem_the_file_already_had_does_not_block_a_change(
    configured: Path, user_config: Path
) -> None:
    config = configured / ".agent-lsp" / "config.toml"
    config.write_text(CONFIG + "maxStep = 3\n")  # a typo of the user's, warned about already
    record = await apply(configured, user_config, patch(config=[{"key": "maxSteps", "value": 30}]))
    assert "maxSteps = 30\n" in config.read_text() and "maxStep = 3\n" in config.read_text()
    assert record.checked == ["settings reload and validate", "tool schemas build with the notes"]
