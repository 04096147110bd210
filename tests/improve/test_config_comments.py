"""An improvement that sets keys in a hand-written `.agent-lsp/config.toml` keeps its comments,
order and every other line byte for byte; a file it cannot edit line by line (a key in an
inline table) is refused with the reason and left as it was."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from agent_lsp.config.settings import load_settings
from agent_lsp.improve import ImprovementError, ImprovementPatch, apply_improvement

HAND_WRITTEN = """\
# Settings for this repository — keep in sync with CI (see ci.yml)
max_steps = 25  # enough for our refactors

[tests]
# the suite is slow on CI machines
timeout = 600.0   # seconds
run_on_save = false

[compaction]   # how early to compact
task = 0.7
fix = 0.6 # fixes are short
"""


async def apply(root: Path, tmp_path: Path, *changes: tuple[str, object]) -> None:
    user_config = tmp_path / "user-config.toml"
    settings = load_settings(root, environ={}, user_config=user_config, trusted=True).settings
    patch = ImprovementPatch.model_validate(
        {"summary": "s", "config": [{"key": k, "value": v} for k, v in changes]}
    )
    await apply_improvement(root, patch, "r", settings, trusted=True, user_config=user_config)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / ".agent-lsp").mkdir(parents=True)
    (folder / ".agent-lsp" / "config.toml").write_text(HAND_WRITTEN)
    return folder


async def test_set_keys_keep_every_other_byte_of_a_commented_file(
    root: Path, tmp_path: Path
) -> None:
    config = root / ".agent-lsp" / "config.toml"
    await apply(
        root,
        tmp_path,
        ("compaction.fix", 0.5),  # a value with a comment after it
        ("compaction.task", None),  # removed
        ("compaction.explain", 0.4),  # a new key in an existing table
        ("memory.maxInjected", 3),  # a new table
        ("maxSteps", 40),  # a top-level key, written snake_case: that line, not a new one
    )
    assert config.read_text() == (
        "# Settings for this repository — keep in sync with CI (see ci.yml)\n"
        "max_steps = 40  # enough for our refactors\n"
        "\n"
        "[tests]\n"
        "# the suite is slow on CI machines\n"
        "timeout = 600.0   # seconds\n"
        "run_on_save = false\n"
        "\n"
        "[compaction]   # how early to compact\n"
        "fix = 0.5 # fixes are short\n"
        "explain = 0.4\n"
        "\n"
        "[memory]\n"
        "maxInjected = 3\n"
    )
    assert tomllib.loads(config.read_text())["compaction"] == {
        "fix": 0.5,
        "explain": 0.4,
    }


async def test_a_file_it_cannot_edit_line_by_line_is_refused_and_kept(
    root: Path, tmp_path: Path
) -> None:
    config = root / ".agent-lsp" / "config.toml"
    text = "lint = { enabled = false }  # inline\n"
    config.write_text(text)
    with pytest.raises(ImprovementError) as err:
        await apply(root, tmp_path, ("lint.enabled", False), ("maxSteps", 30))
    message = str(err.value)
    assert "not applied: .agent-lsp/config.toml:" in message
    assert "an inline table" in message and "set it by hand" in message
    assert config.read_text() == text
    assert not (root / ".agent-lsp" / "improvements").exists()
