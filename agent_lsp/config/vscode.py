"""Generates the VS Code extension's settings from the settings schema.

`python -m agent_lsp.config.vscode` writes `contributes.configuration` of
editor-configs/vscode/package.json (the rest of the file is kept); `--check` only reports drift.
Keys are `agentLsp.<camelCase path>`; type, enum, default, bounds and description come from
`agent_lsp.config.schema.Settings`. Fields excluded from serialization (`model.apiKey`) are left
out: API keys only come from the environment or the user file. The extension's own settings
(`agentLsp.server.*`, `agentLsp.trace.server`) are added here; the extension does not send them
to the server.

Every setting that an untrusted workspace may not widen (`agent_lsp.config.untrusted`
`untrusted_rule`: the level, the sandbox, every model key, extra roots, what runs by itself) and
the server's command line get `"scope": "application"`: VS Code then ignores them in workspace and
folder settings (`.vscode/settings.json`, which a repository ships and the agent could write); only
the User settings set them. Not `"machine"`, which keeps them out of workspaces too, but which VS
Code also drops from the User settings whenever the window is remote: code-server, and
Remote-SSH/WSL/containers, read machine settings only from the Remote settings file, so a user's
`agentLsp.server.path` in their User settings would be ignored there. The rest is `"window"`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent_lsp.config.schema import Settings
from agent_lsp.config.untrusted import untrusted_rule

PREFIX = "agentLsp."
TITLE = "agent-lsp"
PACKAGE_JSON = Path(__file__).resolve().parents[2] / "editor-configs" / "vscode" / "package.json"
# VS Code reads these from the User settings only, never from workspace or folder settings,
# in local and remote windows alike.
USER_ONLY = "application"

# JSON-schema keywords VS Code's settings editor understands and validates.
_KEPT = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
)

EXTENSION_SETTINGS: dict[str, dict[str, Any]] = {
    "server.path": {
        "type": "string",
        "default": "agent-lsp",
        "scope": USER_ONLY,
        "markdownDescription": "The agent-lsp executable (a name on `PATH` or a full path). "
        "To run it from a Python environment instead, set this to that environment's `python` "
        'and `#agentLsp.server.args#` to `["-m", "agent_lsp", "serve"]`. Changing it restarts '
        "the server. (Extension setting, not sent to the server.)",
    },
    "server.args": {
        "type": "array",
        "items": {"type": "string"},
        "default": ["serve"],
        "scope": USER_ONLY,
        "markdownDescription": "Arguments for `#agentLsp.server.path#`. Changing them restarts "
        "the server. (Extension setting, not sent to the server.)",
    },
    "trace.server": {
        "type": "string",
        "enum": ["off", "messages", "verbose"],
        "default": "off",
        "markdownDescription": "Log the LSP messages between VS Code and agent-lsp in the "
        "agent-lsp output. (Extension setting, not sent to the server.)",
        "scope": "window",
    },
}


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return {**defs[ref.rsplit("/", 1)[-1]], **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _json_value(value: Any) -> Any:
    """Integral floats as ints (as npm writes package.json), so both tools write the same bytes."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def _property(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """One leaf field's JSON schema -> a VS Code configuration property."""
    schema = _resolve(schema, defs)
    types: list[str] = []
    enum: list[Any] | None = None
    out: dict[str, Any] = {}
    for variant in schema.get("anyOf") or [schema]:
        variant = _resolve(variant, defs)
        kind = variant.get("type")
        if isinstance(kind, str) and kind not in types:
            types.append(kind)
        if "enum" in variant:
            enum = list(variant["enum"])
        if kind == "array" and "items" in variant:
            out["items"] = _property(variant["items"], defs)
        for key in _KEPT:
            if key in variant:
                out[key] = _json_value(variant[key])
    if types:
        out["type"] = types[0] if len(types) == 1 else types
    if enum is not None:
        out["enum"] = [*enum, None] if "null" in types and None not in enum else enum
    if "default" in schema:
        out["default"] = _json_value(schema["default"])
    if description := schema.get("description"):
        out["markdownDescription"] = description
    return dict(sorted(out.items(), key=lambda item: _ORDER.index(item[0])))


_ORDER = ("type", "items", "enum", "default", *_KEPT, "markdownDescription", "scope", "order")


def _schema_properties(
    model: type[BaseModel], prefix: tuple[str, ...] = ()
) -> dict[str, dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True)
    defs: Mapping[str, Any] = schema.get("$defs", {})
    found: dict[str, dict[str, Any]] = {}
    for name, field in model.model_fields.items():
        path = (*prefix, field.alias or name)
        if field.exclude:  # secrets (model.apiKey): never from the editor
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.update(_schema_properties(annotation, path))
            continue
        prop = _property(schema["properties"][path[-1]], defs)
        # `args`: the server drops what a workspace may not set (agent_lsp.config.testargs)
        prop["scope"] = "window" if untrusted_rule(path) in ("free", "args") else USER_ONLY
        found[".".join(path)] = prop
    return found


def render() -> dict[str, dict[str, Any]]:
    """`contributes.configuration.properties`: the extension's settings, then the schema's."""
    merged = {**EXTENSION_SETTINGS, **_schema_properties(Settings)}
    return {
        PREFIX + key: {**prop, "order": index} for index, (key, prop) in enumerate(merged.items())
    }


def configuration() -> dict[str, Any]:
    return {"title": TITLE, "properties": render()}


def updated(text: str) -> str:
    """package.json text with its generated block replaced, everything else kept in order."""
    manifest: dict[str, Any] = json.loads(text)
    contributes: dict[str, Any] = manifest.setdefault("contributes", {})
    contributes["configuration"] = configuration()
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_lsp.config.vscode", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if package.json is stale")
    parser.add_argument("--package-json", type=Path, default=PACKAGE_JSON)
    args = parser.parse_args(argv)
    target: Path = args.package_json
    text = target.read_text(encoding="utf-8")
    new = updated(text)
    if args.check:
        if new != text:
            print(f"{target} is stale: run `python -m agent_lsp.config.vscode`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        target.write_text(new, encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
