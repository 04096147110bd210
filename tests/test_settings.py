from __future__ import annotations

from pathlib import Path

from agent_lsp.config.schema import ApplyMode, Settings
from agent_lsp.config.settings import load_settings


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


def test_unknown_keys_are_named_with_the_nearest_known_key_file_and_section(
    tmp_path: Path,
) -> None:
    user = tmp_path / "user.toml"
    user.write_text(
        'maxStep = 3\ncontextWindow = 9000\n[model]\nname = "m"\nmax_tokenz = 5\n'
        "[sandbox]\nNetwork = false\nfrobnicate = 1\n[policy]\ndeny = []\n"
    )
    root = tmp_path / "proj"
    (root / ".agent-lsp").mkdir(parents=True)
    project = root / ".agent-lsp/config.toml"
    project.write_text("maxSteps = 4\ntoolTimout = 5\n")
    loaded = load_settings(root, environ={}, user_config=user, trusted=False)
    assert loaded.warnings == [
        f"user config {user}: unknown key `maxStep` at the top level (did you mean `maxSteps`?)"
        "; ignored",
        f"user config {user}: unknown key `contextWindow` at the top level (did you mean "
        "`contextWindow` in [model]?); ignored",
        f"user config {user}: unknown key `maxTokenz` in [model] (did you mean `maxTokens`?)"
        "; ignored",
        f"user config {user}: unknown key `Network` in [sandbox] (did you mean `network`?)"
        "; ignored",
        f"user config {user}: unknown key `frobnicate` in [sandbox]; ignored",
        f"project config {project}: unknown key `toolTimout` at the top level (did you mean "
        "`toolTimeout`?); ignored",
    ]
    assert loaded.settings.max_steps == 4 and loaded.settings.model.name == "m"


def test_a_value_where_a_section_goes_says_how_to_write_it(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text('model = "gpt-4o"\nsandbox = true\nmaxSteps = 6\n')
    loaded = load_settings(None, {"model": "gpt-4o"}, environ={}, user_config=user)
    assert loaded.warnings == [
        f'user config {user}: `model` is a section, not a value: use `[model] name = "gpt-4o"`'
        "; ignored",
        f"user config {user}: `sandbox` is a section, not a value: use `[sandbox]` with its "
        "keys; ignored",
        "editor settings: invalid settings ignored: model: a section, not a value: use "
        "`[model] name = …`",
    ]
    assert loaded.settings.max_steps == 6
    assert all("ModelSettings" not in w for w in loaded.warnings)


def test_config_that_is_not_utf8_or_not_a_table_is_a_warning_not_a_crash(
    tmp_path: Path,
) -> None:
    user = tmp_path / "user.toml"
    user.write_bytes("maxSteps = 3 # café\n".encode("latin-1"))
    loaded = load_settings(None, ["not", "a", "table"], environ={}, user_config=user)  # type: ignore[arg-type]
    assert loaded.warnings == [
        f"user config {user}: not UTF-8 text (TOML files are UTF-8); nothing in it applies",
        "editor settings: not a table of settings (list); ignored",
    ]
    assert loaded.settings == Settings.model_validate({})
    from agent_lsp.safety.setup import build_policy

    root = tmp_path / "proj"
    root.mkdir()
    policy = build_policy(root, loaded.settings, user_config=user, trusted=False)
    assert not any("user config" in m for m in policy.messages)  # said once, above
