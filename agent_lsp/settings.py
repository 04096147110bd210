"""One settings tree: defaults, user file, project file, editor options, environment — merged once.

Keys are camelCase on the wire (initializationOptions, workspace/configuration, TOML); snake_case is
accepted too. API keys only ever come from the environment or the user's own config file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic.alias_generators import to_camel


class _Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", validate_default=True
    )


class ToolCalling(StrEnum):
    AUTO = "auto"
    NATIVE = "native"
    TEXT = "text"


class ModelSettings(_Section):
    base_url: str = Field(
        "https://api.openai.com/v1",
        description="OpenAI-compatible endpoint (OpenAI, DeepSeek, Ollama, vLLM, llama.cpp ...).",
    )
    name: str = Field("gpt-4o-mini", description="Model name sent to the endpoint.")
    api_key: SecretStr | None = Field(
        None,
        description="API key. Only read from the environment or the user config file, never "
        "from a project or the editor.",
        exclude=True,
    )
    timeout: float = Field(120.0, gt=0, description="Seconds to wait for one model call.")
    max_retries: int = Field(
        2, ge=0, le=10, description="Retries on 429, 5xx and timeouts (Retry-After is respected)."
    )
    stream: bool = Field(True, description="Stream replies, so that cancelling a task is prompt.")
    temperature: float | None = Field(
        0.0, description="Sampling temperature; null = endpoint default."
    )
    context_window: int = Field(
        128_000, ge=2_000, description="Tokens the model accepts; history is compacted at 70%."
    )
    tool_calling: ToolCalling = Field(
        ToolCalling.AUTO,
        description="`native` tool calls, `text` (tools described in the prompt, for models "
        "without tool calling), or `auto` (native, switching to text if the endpoint refuses).",
    )


class ApplyMode(StrEnum):
    DIRECT = "direct"
    REVIEW = "review"


class PermissionLevel(StrEnum):
    L0 = "L0"
    L1 = "L1"
    L2 = "L2"
    L3 = "L3"


class SuggestionSettings(_Section):
    enabled: bool = Field(
        False,
        description="Prepare fixes in the background for new diagnostics (after a 2 s pause, "
        "at most 10 an hour, never while a task runs) and offer each as a code action "
        "carrying the edit.",
    )


class TestSettings(_Section):
    run_on_save: bool = Field(False, description="Run the project's tests when a file is saved.")
    timeout: float = Field(300.0, gt=0, description="Seconds before a test run is killed.")


class LintSettings(_Section):
    enabled: bool = Field(
        False,
        description="Run the project's linters and compilers (ruff or pyflakes, go vet, tsc) on "
        "open and save, on the editor's text, and publish what they find as diagnostics.",
    )


class MemorySettings(_Section):
    distill: bool = Field(
        True,
        description="After a key event (fail -> fix -> pass, a stack change, the user's "
        "remember), one extra model call writes an experience file under .agent-lsp/memory/.",
    )
    inject: bool = Field(
        True, description="Give each task the most relevant experiences (at most 300 words)."
    )
    max_injected: int = Field(5, ge=0, le=10, description="Most experiences given to a task.")
    init_step_timeout: float = Field(
        10.0, gt=0, description="Seconds before a project step in .agent-lsp/init.d/ is killed."
    )


class SandboxSettings(_Section):
    enabled: bool = Field(
        True,
        description="Run commands under the OS sandbox (bubblewrap on Linux) where available: "
        "only the workspace writable, no network. A repository's own config cannot turn it off "
        "until you trust the workspace.",
    )
    network: bool = Field(
        False,
        description="Give every sandboxed command the network (by default only commands the "
        "policy or you allowed as network commands get it).",
    )


class Settings(_Section):
    """Every agent-lsp setting (camelCase keys on the wire)."""

    model: ModelSettings = Field(default_factory=lambda: ModelSettings.model_validate({}))
    apply_mode: ApplyMode = Field(
        ApplyMode.DIRECT,
        description="`direct` edits the buffer; `review` makes each change a proposal on its "
        "lines (Apply / Show diff / Reject), kept until decided, also across restarts.",
    )
    permission_level: PermissionLevel = Field(
        PermissionLevel.L2,
        description="L0 read-only; L1 edits in the workspace and read-only commands; L2 asks "
        "for every side effect; L3 full-auto for CI, only with an allowlist in the policy "
        "(see docs/security.md).",
    )
    extra_roots: list[str] = Field(
        default=[],
        description="Folders besides the workspace that tools may read and write "
        "(a repository's own config cannot add them until you trust the workspace).",
    )
    sandbox: SandboxSettings = Field(default_factory=lambda: SandboxSettings.model_validate({}))
    max_steps: int = Field(25, ge=1, le=500, description="Most model turns one task may take.")
    tool_timeout: float = Field(60.0, gt=0, description="Seconds before a tool call is stopped.")
    edit_timeout: float = Field(
        10.0, gt=0, description="Seconds to wait for the editor to accept an edit."
    )
    max_tokens: int = Field(
        1_000_000, ge=1_000, description="Token budget of one task (prompt + completion)."
    )
    suggestions: SuggestionSettings = Field(
        default_factory=lambda: SuggestionSettings.model_validate({})
    )
    tests: TestSettings = Field(default_factory=lambda: TestSettings.model_validate({}))
    lint: LintSettings = Field(default_factory=lambda: LintSettings.model_validate({}))
    memory: MemorySettings = Field(default_factory=lambda: MemorySettings.model_validate({}))


USER_CONFIG = Path("~/.config/agent-lsp/config.toml")
PROJECT_CONFIG = Path(".agent-lsp/config.toml")
# A repository's own config never sets the API key; until the user trusts the workspace it may
# not widen permissions or send the key to another endpoint either (see _untrusted).
_PROJECT_FORBIDDEN = (("model", "apiKey"),)
_PROJECT_UNTRUSTED = (("model", "baseUrl"), ("extraRoots",))
_EDITOR_FORBIDDEN = (("model", "apiKey"),)
_LEVELS = ("L0", "L1", "L2", "L3")


def _camel(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {to_camel(str(k)) if "_" in str(k) else str(k): _camel(v) for k, v in data.items()}
    return data


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = dict(base)
    for key, value in top.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(old, value)
        else:
            merged[key] = value
    return merged


def env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    model: dict[str, Any] = {}
    base_url = environ.get("AGENT_LSP_BASE_URL") or environ.get("OPENAI_BASE_URL")
    if base_url:
        model["baseUrl"] = base_url
    if name := environ.get("AGENT_LSP_MODEL"):
        model["name"] = name
    key = environ.get("AGENT_LSP_API_KEY") or environ.get("OPENAI_API_KEY")
    if key:
        model["apiKey"] = key
    return {"model": model} if model else {}


def read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    with path.open("rb") as fh:
        return _camel(tomllib.load(fh))


def _pop(layer: dict[str, Any], path: tuple[str | int, ...]) -> bool:
    node: Any = layer
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and path[-1] in node:
        del node[path[-1]]
        return True
    return False


def _strip(
    layer: dict[str, Any], keys: tuple[tuple[str, ...], ...], warnings: list[str], src: str
) -> None:
    for path in keys:
        if _pop(layer, path):
            warnings.append(f"{src}: ignored {'.'.join(path)} (not allowed from here)")


def _untrusted(
    layer: dict[str, Any], below: Mapping[str, Any], warnings: list[str], src: str
) -> None:
    """Drop what an untrusted project config may not do: change the endpoint, add roots, turn
    the sandbox off or give it the network, raise the level above the user's."""
    why = "until you trust this workspace (agent-lsp trust)"
    dropped = [p for p in _PROJECT_UNTRUSTED if _pop(layer, p)]
    sandbox = layer.get("sandbox")
    if isinstance(sandbox, dict):
        if sandbox.get("enabled") is False and _pop(layer, ("sandbox", "enabled")):
            dropped.append(("sandbox", "enabled"))
        if sandbox.get("network") is True and _pop(layer, ("sandbox", "network")):
            dropped.append(("sandbox", "network"))
    level = layer.get("permissionLevel")
    current = str(below.get("permissionLevel", "L2"))
    if level is not None and (
        level not in _LEVELS
        or current not in _LEVELS
        or _LEVELS.index(level) > _LEVELS.index(current)
    ):
        _pop(layer, ("permissionLevel",))
        dropped.append(("permissionLevel",))
    warnings.extend(f"{src}: ignored {'.'.join(p)} {why}" for p in dropped)


class LoadedSettings(BaseModel):
    settings: Settings
    warnings: list[str]
    trusted: bool = False  # the project's own config was applied as trusted


def load_settings(
    root: Path | None,
    editor_options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
    trusted: bool | None = None,
) -> LoadedSettings:
    """Merge every source in precedence order; invalid layers are reported and skipped.
    `trusted` (default: looked up in `trusted.toml` beside the user config) lets the project
    config widen settings."""
    from agent_lsp.safety.trust import TrustStore

    warnings: list[str] = []
    environ = os.environ if environ is None else environ
    layers: list[tuple[str, dict[str, Any]]] = []
    user_path = (user_config or USER_CONFIG).expanduser()
    if trusted is None:
        trusted = root is not None and TrustStore(user_path.parent / "trusted.toml").is_trusted(
            root
        )
    for src, path in (
        ("user config", user_path),
        ("project config", root and root / PROJECT_CONFIG),
    ):
        if path is None:
            continue
        try:
            layer = read_toml(path)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            warnings.append(f"{src} {path}: {exc}")
            continue
        if src == "project config":
            _strip(layer, _PROJECT_FORBIDDEN, warnings, f"{src} {path}")
            if not trusted:
                below: dict[str, Any] = {}
                for _, lower in layers:
                    below = deep_merge(below, lower)
                _untrusted(layer, below, warnings, f"{src} {path}")
        layers.append((f"{src} {path}", layer))
    if editor_options:
        editor = _camel(dict(editor_options))
        _strip(editor, _EDITOR_FORBIDDEN, warnings, "editor settings")
        layers.append(("editor settings", editor))
    layers.append(("environment", env_layer(environ)))

    merged: dict[str, Any] = {}
    for src, layer in layers:
        merged = _merge_valid(merged, layer, src, warnings)
    return LoadedSettings(
        settings=Settings.model_validate(merged), warnings=warnings, trusted=bool(trusted)
    )


def _merge_valid(
    merged: dict[str, Any], layer: dict[str, Any], src: str, warnings: list[str]
) -> dict[str, Any]:
    """Merge `layer` on top, dropping (and reporting) only the values that do not validate."""
    for _ in range(20):
        candidate = deep_merge(merged, layer)
        try:
            Settings.model_validate(candidate)
        except ValidationError as exc:
            warnings.append(f"{src}: invalid settings ignored: {_brief(exc)}")
            if not any(_pop(layer, tuple(err["loc"])) for err in exc.errors()):
                return merged
            continue
        return candidate
    return merged


def _brief(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()[:5]
    )
