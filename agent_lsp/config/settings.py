"""One settings tree: defaults, user file, project file, editor options, environment — merged once.

Keys are camelCase on the wire (initializationOptions, workspace/configuration, TOML); snake_case is
accepted too. API keys only ever come from the environment or the user's own config file.
"""

from __future__ import annotations

import copy
import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from agent_lsp.config.schema import Settings
from agent_lsp.config.untrusted import (
    EDITOR_FORBIDDEN,
    LATER,
    PROJECT_FORBIDDEN,
    as_table,
    confine,
    strip_forbidden,
    strip_mcp,
)

USER_CONFIG = Path("~/.config/agent-lsp/config.toml")
PROJECT_CONFIG = Path(".agent-lsp/config.toml")


def _verbatim(at: tuple[str, ...]) -> bool:
    """Tables whose keys are names, not settings (kept as written: `my_docs`, `GITHUB_TOKEN`):
    the MCP servers and each one's environment."""
    return at == ("mcp", "servers") or (
        len(at) == 4 and at[:2] == ("mcp", "servers") and at[3] == "env"
    )


def _camel(data: Any, at: tuple[str, ...] = ()) -> Any:
    if isinstance(data, Mapping):
        out: dict[str, Any] = {}
        for k, v in cast("Mapping[object, Any]", data).items():
            key = str(k) if _verbatim(at) or "_" not in str(k) else to_camel(str(k))
            out[key] = _camel(v, (*at, key))
        return out
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


def _pop(layer: dict[str, Any], path: tuple[str | int, ...]) -> bool:
    """Remove the deepest table entry along `path` (a whole list for an error in one item)."""
    node: object = layer
    parent: dict[str, Any] | None = None
    key = ""
    for part in path:
        table = as_table(node)
        if table is None or not isinstance(part, str) or part not in table:
            break
        parent, key, node = table, part, table[part]
    if parent is None:
        return False
    del parent[key]
    return True


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
        table = as_table(value)
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
    strip_forbidden(layer, EDITOR_FORBIDDEN, warnings, src)
    strip_mcp(layer, warnings, src)
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
        strip_forbidden(project, PROJECT_FORBIDDEN, warnings, src)
        strip_mcp(project, warnings, src)
        confine(project, mine, trusted, warnings, src)
        layers.append((src, project))
    if editor_updates is not None:
        started, editor = editor, _editor(editor_updates, LATER, warnings)
        confine(editor, mine, trusted, warnings, LATER, keep=started)
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
