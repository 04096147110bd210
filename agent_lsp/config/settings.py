"""One settings tree: defaults, user file, project file, editor options, environment — merged once.

Keys are camelCase on the wire (initializationOptions, workspace/configuration, TOML); snake_case is
accepted too. API keys only ever come from the environment or the user's own config file.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints, ValidationError
from pydantic.alias_generators import to_camel


class _Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", validate_default=True
    )


EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class ToolCalling(StrEnum):
    AUTO = "auto"
    NATIVE = "native"
    TEXT = "text"


class ModelPrice(_Section):
    input: float | None = Field(
        None, ge=0, description="USD per million prompt tokens (for the cost in the summary)."
    )
    output: float | None = Field(
        None, ge=0, description="USD per million completion tokens (for the cost in the summary)."
    )

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for these tokens; None unless both prices are set."""
        if self.input is None or self.output is None:
            return None
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


class ModelRoute(_Section):
    """One task kind's model: a name, and optionally its own endpoint."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )

    name: str = Field(min_length=1, description="Model name sent to the endpoint.")
    base_url: str | None = Field(
        None, description="Its endpoint; unset: the main model's (`model.baseUrl`)."
    )
    api_key_env: EnvName | None = Field(
        None,
        description="The environment variable holding its API key. Unset: the main model's "
        "key on the main endpoint, no key on another one.",
    )
    max_tokens: int | None = Field(
        None, ge=16, le=1_000_000, description="Its output cap; unset: `model.maxTokens`."
    )


_ROUTE = (
    ": a table with `name`, optionally `baseUrl` (unset: `model.baseUrl`), `apiKeyEnv` (the "
    "environment variable holding its key; unset: the main key on the main endpoint, no key "
    "on another) and `maxTokens`. Unset: the main model."
)


class ModelRoutes(_Section):
    explain: ModelRoute | None = Field(None, description="The model of `explain` tasks" + _ROUTE)
    suggestions: ModelRoute | None = Field(
        None, description="The model of background suggestions" + _ROUTE
    )
    fix: ModelRoute | None = Field(None, description="The model of `fix` tasks" + _ROUTE)
    task: ModelRoute | None = Field(None, description="The model of free-text tasks" + _ROUTE)
    distillation: ModelRoute | None = Field(
        None,
        description="The model that distils experiences after a task and the user's "
        "remember" + _ROUTE,
    )


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
    max_tokens: int = Field(
        4096,
        ge=16,
        le=1_000_000,
        description="Output cap of one model call (sent as `max_tokens`); a reply cut there is "
        "reported as cut, in the log and to the model.",
    )
    temperature: float | None = Field(
        0.0, description="Sampling temperature; null = endpoint default."
    )
    context_window: int = Field(
        128_000,
        ge=2_000,
        description="Tokens the model accepts; history is compacted at the share the "
        "`compaction` settings give each task kind.",
    )
    price: ModelPrice = Field(
        default_factory=lambda: ModelPrice.model_validate({}),
        description="The model's price, for the cost in a task's summary: "
        "`[model] price = {input = 0.15, output = 0.6}` (USD per million tokens).",
    )
    tool_calling: ToolCalling = Field(
        ToolCalling.AUTO,
        description="`native` tool calls, `text` (tools described in the prompt, for models "
        "without tool calling), or `auto` (native, switching to text if the endpoint refuses).",
    )
    routes: ModelRoutes = Field(
        default_factory=lambda: ModelRoutes.model_validate({}),
        description="Other models for some task kinds, e.g. "
        '`[model.routes.explain] name = "qwen2.5-coder:7b", baseUrl = "http://localhost:11434/v1"`'
        "; on a connection error, an HTTP 5xx or an unknown model the main model answers "
        "instead (said in the session log). Only from your own settings.",
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
    pass_env: list[EnvName] = Field(
        default=[],
        description="Names of environment variables passed into commands, tests and linters "
        "besides the built-in allowlist. Only from your own settings (user file, editor "
        "start-up options, `AGENT_LSP_PASS_ENV`): a repository's own config cannot add names "
        "until you trust the workspace, and never a name that looks like a secret (KEY, TOKEN, "
        "SECRET, PASSWORD, CREDENTIAL ...).",
    )


class CompactionSettings(_Section):
    fix: float = Field(
        0.6,
        ge=0.1,
        le=0.95,
        description="Share of `model.contextWindow` at which a fix task's history is compacted.",
    )
    task: float = Field(
        0.7,
        ge=0.1,
        le=0.95,
        description="Share of `model.contextWindow` at which a "
        "free-text task's history is compacted.",
    )
    explain: float = Field(
        0.5,
        ge=0.1,
        le=0.95,
        description="Share of `model.contextWindow` at which an "
        "explain task's history is compacted.",
    )
    summarise: bool = Field(
        True,
        description="When masking old tool outputs is not enough, one model call summarises "
        "the older turns (the user's instructions and the last 10 turns stay whole); if it "
        "fails, the masked history is kept.",
    )

    def threshold(self, kind: str) -> float:
        return {"fix": self.fix, "explain": self.explain}.get(kind, self.task)


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
        10.0,
        gt=0,
        description="Seconds an edit waits for the editor before the task says that it waits "
        "(it goes on waiting, e.g. while you confirm the edit: cancel the task to stop).",
    )
    max_tokens: int = Field(
        1_000_000, ge=1_000, description="Token budget of one task (prompt + completion)."
    )
    ask_timeout: float = Field(
        120.0,
        gt=0,
        le=600,
        description="Seconds the agent waits for your answer to a question (ask_user, a "
        "permission prompt, a conflict found at a rebuild); no answer in time is no answer.",
    )
    suggestions: SuggestionSettings = Field(
        default_factory=lambda: SuggestionSettings.model_validate({})
    )
    tests: TestSettings = Field(default_factory=lambda: TestSettings.model_validate({}))
    lint: LintSettings = Field(default_factory=lambda: LintSettings.model_validate({}))
    memory: MemorySettings = Field(default_factory=lambda: MemorySettings.model_validate({}))
    compaction: CompactionSettings = Field(
        default_factory=lambda: CompactionSettings.model_validate({})
    )


USER_CONFIG = Path("~/.config/agent-lsp/config.toml")
PROJECT_CONFIG = Path(".agent-lsp/config.toml")
_ROUTES = ("explain", "suggestions", "fix", "task", "distillation")
# A repository's own config and the editor never set the API key; a repository never names
# the variable a route's key is read from.
_PROJECT_FORBIDDEN = (
    ("model", "apiKey"),
    *(("model", "routes", kind, "apiKeyEnv") for kind in _ROUTES),
)
_EDITOR_FORBIDDEN = (("model", "apiKey"),)
_LEVELS = ("L0", "L1", "L2", "L3")
_WHY = "until you trust this workspace (agent-lsp trust)"
_LATER = "editor settings sent after start-up"

# What an untrusted layer (the project's config; settings the editor sends after start-up) may
# do with a key, measured against the user's own value: `free` anything; `off`/`on` only turn
# it off/on; `stricter` a value earlier in _STRICTEST_FIRST; `subset` only drop entries; `same`
# (every key not listed: all of model.*, whatever is added later) change nothing. It may always
# restrict, never widen.
_Rule = Literal["free", "same", "off", "on", "stricter", "subset"]
UNTRUSTED_RULES: dict[tuple[str, ...], _Rule] = {
    ("applyMode",): "stricter",
    ("maxSteps",): "free",
    ("toolTimeout",): "free",
    ("editTimeout",): "free",
    ("maxTokens",): "free",
    ("askTimeout",): "free",
    ("tests", "timeout"): "free",
    ("memory", "maxInjected"): "free",
    ("memory", "initStepTimeout"): "free",
    ("permissionLevel",): "stricter",
    ("extraRoots",): "subset",
    ("sandbox", "passEnv"): "subset",
    ("sandbox", "enabled"): "on",
    ("sandbox", "network"): "off",
    ("tests", "runOnSave"): "off",
    ("lint", "enabled"): "off",
    ("suggestions", "enabled"): "off",
    ("memory", "distill"): "off",
    ("memory", "inject"): "off",
    ("compaction", "fix"): "free",
    ("compaction", "task"): "free",
    ("compaction", "explain"): "free",
    ("compaction", "summarise"): "off",
}


_STRICTEST_FIRST: dict[tuple[str, ...], tuple[str, ...]] = {
    ("permissionLevel",): _LEVELS,
    ("applyMode",): ("review", "direct"),  # a proposal to accept is stricter than an edit
}


def untrusted_rule(path: tuple[str, ...]) -> _Rule:
    """What an untrusted layer may do with the key at `path` (see UNTRUSTED_RULES)."""
    return UNTRUSTED_RULES.get(path, "same")


def only_restricts(path: tuple[str, ...], value: Any, mine: Any) -> bool:
    """Does `value` at `path` keep or restrict `mine` (what an untrusted layer may set)?"""
    return _keeps(path, value, mine)


# Names a sandbox passes only when the user listed them in their own settings.
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|CREDENTIAL|AUTH|SESSION|COOKIE", re.I
)


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
    layer: dict[str, Any] = {"model": model} if model else {}
    if names := environ.get("AGENT_LSP_PASS_ENV", "").strip():
        layer["sandbox"] = {"passEnv": [n.strip() for n in names.split(",") if n.strip()]}
    return layer


def read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    with path.open("rb") as fh:
        return _camel(tomllib.load(fh))


def _table(value: object) -> dict[str, Any] | None:
    """`value` as a settings table (TOML and JSON tables have string keys), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _names(value: object) -> list[Any] | None:
    return cast("list[Any]", value) if isinstance(value, list) else None


def _pop(layer: dict[str, Any], path: tuple[str | int, ...]) -> bool:
    """Remove the deepest table entry along `path` (a whole list for an error in one item)."""
    node: object = layer
    parent: dict[str, Any] | None = None
    key = ""
    for part in path:
        table = _table(node)
        if table is None or not isinstance(part, str) or part not in table:
            break
        parent, key, node = table, part, table[part]
    if parent is None:
        return False
    del parent[key]
    return True


def _strip(
    layer: dict[str, Any], keys: tuple[tuple[str, ...], ...], warnings: list[str], src: str
) -> None:
    for path in keys:
        node: Any = layer
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            warnings.append(f"{src}: ignored {'.'.join(path)} (not allowed from here)")


def _keeps(path: tuple[str, ...], value: Any, mine: Any) -> bool:
    """May an untrusted layer set `value` at `path` where the user's own settings give `mine`?"""
    rule = untrusted_rule(path)
    if rule == "free" or value == mine:
        return True
    if rule == "off":
        return value is False
    if rule == "on":
        return value is True
    if rule == "stricter":
        order = _STRICTEST_FIRST[path]
        return value in order and mine in order and order.index(value) <= order.index(mine)
    if rule == "subset":
        entries, own = _names(value), _names(mine)
        return entries is not None and own is not None and all(v in own for v in entries)
    return False


def _guard(
    layer: dict[str, Any],
    mine: Mapping[str, Any],
    keep: Mapping[str, Any] | None = None,
    at: tuple[str, ...] = (),
) -> list[str]:
    """Drop from `layer` what widens the user's own settings `mine` (putting back the value
    `keep` has, the editor's start-up options); the dropped keys."""
    dropped: list[str] = []
    for key in list(layer):
        value, ref, here = layer[key], mine.get(key, mine), (*at, key)
        if ref is mine:  # not a setting (ignored anyway)
            continue
        table, own = _table(value), _table(ref)
        if table is not None and own is not None:
            dropped += _guard(table, own, _table(keep.get(key)) if keep else None, here)
        elif not _keeps(here, value, ref):
            del layer[key]
            if keep is not None and key in keep:
                layer[key] = copy.deepcopy(keep[key])
            dropped.append(".".join(here))
    return dropped


def _confine(
    layer: dict[str, Any],
    mine: Mapping[str, Any],
    trusted: bool,
    warnings: list[str],
    src: str,
    keep: Mapping[str, Any] | None = None,
) -> None:
    """A layer the user did not write: widening keys only once trusted, and never a
    secret-looking name in `sandbox.passEnv` the user did not list themselves."""
    if not trusted:
        warnings.extend(f"{src}: ignored {key} {_WHY}" for key in _guard(layer, mine, keep))
    sandbox = _table(layer.get("sandbox"))
    names = _names(sandbox.get("passEnv")) if sandbox is not None else None
    if sandbox is not None and names is not None:
        own = mine["sandbox"]["passEnv"]
        secret = [n for n in names if isinstance(n, str) and _SECRET_NAME.search(n)]
        secret = [n for n in secret if n not in own]
        sandbox["passEnv"] = [n for n in names if n not in secret]
        warnings.extend(
            f"{src}: ignored sandbox.passEnv {n} (a secret by its name: only your own settings "
            "pass it)"
            for n in secret
        )


class LoadedSettings(BaseModel):
    settings: Settings
    warnings: list[str]
    trusted: bool = False  # the project's own config was applied as trusted


def _read(src: str, path: Path, warnings: list[str]) -> dict[str, Any]:
    try:
        return read_toml(path)
    except UnicodeDecodeError:
        warnings.append(
            f"{src} {path}: not UTF-8 text (TOML files are UTF-8); nothing in it applies"
        )
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"{src} {path}: {exc}; nothing in it applies")
        return {}


# Top-level tables of a config file that are not settings: the user config's `[policy]` rules
# (agent_lsp.safety.setup reads them); a project keeps its rules in .agent-lsp/policy.toml.
_OTHER_TABLES = {"user": ("policy",), "project": ()}


def _fields(model: type[BaseModel]) -> dict[str, type[BaseModel] | None]:
    """The camelCase keys of a section, each with its sub-section (None: a value)."""
    out: dict[str, type[BaseModel] | None] = {}
    for name, field in model.model_fields.items():
        kind = field.annotation
        sub = kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None
        out[field.alias or to_camel(name)] = sub
    return out


def _leaves(model: type[BaseModel], at: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for key, sub in _fields(model).items():
        found += _leaves(sub, (*at, key)) if sub is not None else [(*at, key)]
    return found


def _section(at: tuple[str, ...]) -> str:
    return f"in [{'.'.join(at)}]" if at else "at the top level"


def _nearest(key: str, at: tuple[str, ...], here: list[str]) -> str:
    """' (did you mean …?)' for `key` under `at`: a key of the same section, else one of
    another section; '' when nothing is close."""
    folded = {k.casefold(): k for k in here}
    close = [folded[key.casefold()]] if key.casefold() in folded else []
    close = close or difflib.get_close_matches(key, here, n=1, cutoff=0.7)
    if close:
        return f" (did you mean `{close[0]}`?)"
    elsewhere = {path[-1]: path[:-1] for path in _leaves(Settings) if path[:-1] != at}
    names = {k.casefold(): k for k in elsewhere}
    other = [names[key.casefold()]] if key.casefold() in names else []
    other = other or difflib.get_close_matches(key, list(elsewhere), n=1, cutoff=0.8)
    if other:
        name = other[0]
        return f" (did you mean `{name}` {_section(elsewhere[name])}?)"
    return ""


def _check_keys(
    layer: dict[str, Any],
    src: str,
    warnings: list[str],
    other: tuple[str, ...] = (),
    model: type[BaseModel] | None = None,
    at: tuple[str, ...] = (),
) -> None:
    """Report (and drop) what a config file has that is not a setting: unknown keys, with the
    nearest known one; a value where a section goes (`model = "gpt-4o"`)."""
    fields = _fields(model or Settings)
    for key in list(layer):
        value = layer[key]
        if not at and key in other:
            continue
        if not at and key == "policy":
            warnings.append(
                f"{src}: a [policy] table here is not read: a project's rules go in "
                ".agent-lsp/policy.toml; ignored"
            )
            del layer[key]
            continue
        if key not in fields:
            warnings.append(
                f"{src}: unknown key `{key}` {_section(at)}{_nearest(key, at, list(fields))}; "
                "ignored"
            )
            del layer[key]
            continue
        sub = fields[key]
        if sub is None:
            continue
        table = _table(value)
        if table is None:
            dotted = ".".join((*at, key))
            example = (
                f"`[model] name = {_toml(value)}`"
                if dotted == "model"
                else f"`[{dotted}]` with its keys"
            )
            warnings.append(f"{src}: `{dotted}` is a section, not a value: use {example}; ignored")
            del layer[key]
            continue
        _check_keys(table, src, warnings, other, sub, (*at, key))


def _toml(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "…"


def _editor(options: object, src: str, warnings: list[str]) -> dict[str, Any]:
    if options is not None and not isinstance(options, Mapping):
        warnings.append(f"{src}: not a table of settings ({type(options).__name__}); ignored")
        options = None
    layer: dict[str, Any] = _camel(dict(cast("Mapping[str, Any]", options or {})))
    _strip(layer, _EDITOR_FORBIDDEN, warnings, src)
    return layer


def _mine(layers: list[dict[str, Any]]) -> dict[str, Any]:
    """The user's own settings (defaults, user file, start-up editor options, environment)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = _merge_valid(merged, copy.deepcopy(layer), "", [])
    return Settings.model_validate(merged).model_dump(mode="json", by_alias=True)


def load_settings(
    root: Path | None,
    editor_options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
    trusted: bool | None = None,
    editor_updates: Mapping[str, Any] | None = None,
) -> LoadedSettings:
    """Merge every source in precedence order; invalid values are reported once and skipped.
    `editor_options` are the editor's start-up options (the user's); `editor_updates`, sent
    after start-up (workspace/didChangeConfiguration, workspace/configuration), replace them
    but, like the project config, may only restrict until the workspace is trusted. `trusted`
    (default: looked up in `trusted.toml` beside the user config)."""
    from agent_lsp.config.trust import TrustStore

    warnings: list[str] = []
    environ = os.environ if environ is None else environ
    user_path = (user_config or USER_CONFIG).expanduser()
    if trusted is None:
        trusted = root is not None and TrustStore(user_path.parent / "trusted.toml").is_trusted(
            root
        )
    user = _read("user config", user_path, warnings)
    _check_keys(user, f"user config {user_path}", warnings, _OTHER_TABLES["user"])
    project_path = root / PROJECT_CONFIG if root is not None else None
    project = _read("project config", project_path, warnings) if project_path else {}
    if project_path is not None:
        _check_keys(project, f"project config {project_path}", warnings)
    editor = _editor(editor_options, "editor settings", warnings)
    env = env_layer(environ)
    mine = _mine([user, editor, env])
    layers = [(f"user config {user_path}", user)]
    if project_path is not None:
        src = f"project config {project_path}"
        _strip(project, _PROJECT_FORBIDDEN, warnings, src)
        _confine(project, mine, trusted, warnings, src)
        layers.append((src, project))
    if editor_updates is not None:
        started, editor = editor, _editor(editor_updates, _LATER, warnings)
        _confine(editor, mine, trusted, warnings, _LATER, keep=started)
    layers += [("editor settings", editor), ("environment", env)]

    merged: dict[str, Any] = {}
    for src, layer in layers:
        merged = _merge_valid(merged, layer, src, warnings)
    return LoadedSettings(
        settings=Settings.model_validate(merged), warnings=warnings, trusted=bool(trusted)
    )


def _merge_valid(
    merged: dict[str, Any], layer: dict[str, Any], src: str, warnings: list[str]
) -> dict[str, Any]:
    """Merge `layer` on top, dropping (and reporting, once each) the values that do not
    validate."""
    for _ in range(20):
        candidate = deep_merge(merged, layer)
        try:
            Settings.model_validate(candidate)
        except ValidationError as exc:
            popped = False
            for err in exc.errors():
                if _pop(layer, tuple(err["loc"])):
                    popped = True
                    warnings.append(f"{src}: invalid settings ignored: {_where(err)}")
            if not popped:
                warnings.append(f"{src}: invalid settings ignored: {_brief(exc)}")
                return merged
            continue
        return candidate
    return merged


def _where(err: Any) -> str:
    dotted = ".".join(str(p) for p in err["loc"])
    if err["type"] in ("model_type", "model_attributes_type", "dict_type"):
        example = "`[model] name = …`" if dotted == "model" else f"`[{dotted}]` and its keys"
        return f"{dotted}: a section, not a value: use {example}"
    return f"{dotted}: {err['msg']}"


def _brief(exc: ValidationError) -> str:
    return "; ".join(_where(err) for err in exc.errors()[:5])
