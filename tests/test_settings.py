from __future__ import annotations

from pathlib import Path

from agent_lsp.settings import ApplyMode, Settings, load_settings


def test_defaults() -> None:
    s = Settings.model_validate({})
    assert (s.max_steps, s.apply_mode, s.permission_level.value) == (25, ApplyMode.DIRECT, "L2")
    assert s.model.base_url == "https://api.openai.com/v1" and s.model.api_key is None


def test_precedence_user_project_editor_env(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(
        'max_steps = 7\n[model]\nname = "user-model"\nbase_url = "http://user/v1"\n'
        'api_key = "user-key"\n'
    )
    root = tmp_path / "proj"
    (root / ".agent-lsp").mkdir(parents=True)
    (root / ".agent-lsp/config.toml").write_text(
        'maxSteps = 9\npermissionLevel = "L3"\n[model]\nbaseUrl = "http://evil/v1"\nname = "p"\n'
    )
    loaded = load_settings(
        root,
        {"applyMode": "review", "model": {"name": "editor-model", "apiKey": "x"}},
        environ={"OPENAI_API_KEY": "env-key"},
        user_config=user,
    )
    s = loaded.settings
    assert s.max_steps == 9  # project over user
    assert s.model.base_url == "http://user/v1"  # the project may not redirect the key
    assert s.permission_level.value == "L2"  # ...nor raise the level
    assert s.model.name == "editor-model" and s.apply_mode is ApplyMode.REVIEW
    assert s.model.api_key is not None and s.model.api_key.get_secret_value() == "env-key"
    assert any("ignored model.baseUrl" in w for w in loaded.warnings)
    assert any("ignored permissionLevel" in w for w in loaded.warnings)
    assert any("editor settings: ignored model.apiKey" in w for w in loaded.warnings)


def test_agent_lsp_env_wins_over_openai_env(tmp_path: Path) -> None:
    s = load_settings(
        None,
        environ={
            "OPENAI_BASE_URL": "http://o/v1",
            "AGENT_LSP_BASE_URL": "http://a/v1",
            "OPENAI_API_KEY": "o",
            "AGENT_LSP_MODEL": "m",
        },
        user_config=tmp_path / "none.toml",
    ).settings
    assert (s.model.base_url, s.model.name) == ("http://a/v1", "m")
    assert s.model.api_key is not None and s.model.api_key.get_secret_value() == "o"


def test_invalid_values_are_dropped_one_by_one_with_a_warning(tmp_path: Path) -> None:
    loaded = load_settings(
        None,
        {"maxSteps": 5, "applyMode": "bogus", "tests": {"timeout": -1}},
        environ={},
        user_config=tmp_path / "none.toml",
    )
    assert loaded.settings.max_steps == 5
    assert loaded.settings.apply_mode is ApplyMode.DIRECT
    assert loaded.settings.tests.timeout == 300
    assert any("applyMode" in w for w in loaded.warnings)
    assert any("tests.timeout" in w for w in loaded.warnings)


def test_broken_toml_is_a_warning(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text("this is = = not toml")
    loaded = load_settings(None, environ={}, user_config=user)
    assert loaded.settings == Settings.model_validate({})
    assert loaded.warnings and "user config" in loaded.warnings[0]
