"""Project tools as declared in `.agent-lsp/tools.toml`: a named command with typed arguments
that becomes a model-facing tool (`agent_lsp.tools.project`).

    [tools.compose_up]
    description = "Start one service of the integration stack"
    command = ["docker", "compose", "up", "-d", "{service}"]
    read_only = false
    timeout = 120
    [tools.compose_up.args.service]
    type = "enum"            # string | integer | boolean | enum | path
    enum = ["db", "cache"]
    required = true
    description = "The service to start"

An element `{name}` of `command` is replaced by the argument's value as one argv element (or
inside the element, `--port={port}`), never through a shell; an element naming an optional
argument that is not given is left out. The program (the first element) is fixed."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

__all__ = [
    "PLACEHOLDER",
    "ArgSpec",
    "ProjectToolsError",
    "ToolDecl",
    "args_model",
    "check_decl",
    "parse_project_tools",
]

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
ArgType = Literal["string", "integer", "boolean", "enum", "path"]


class ProjectToolsError(ValueError):
    """A tools.toml (or one declaration) that cannot be used as written; the message says why."""


class ArgSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: ArgType = Field("string", description="string, integer, boolean, enum or path.")
    enum: list[str] | None = Field(None, description="The allowed values of an enum.")
    required: bool = Field(False, description="Must the model give it?")
    description: str = Field("", description="What the argument is, for the model.")


class ToolDecl(BaseModel):
    """One `[tools.NAME]` table."""

    model_config = ConfigDict(extra="forbid")
    description: str = Field(min_length=1, description="What the tool does, for the model.")
    command: list[str] = Field(
        min_length=1,
        description='The argv, e.g. ["docker", "compose", "up", "-d", "{service}"]: `{arg}` '
        "is replaced by an argument's value as one element; the program is fixed.",
    )
    read_only: bool = Field(
        False, description="It changes nothing (the policy still decides whether it runs)."
    )
    timeout: float = Field(60.0, gt=0, le=600, description="Seconds before it is killed.")
    args: dict[str, ArgSpec] = Field(default={}, description="The typed arguments, by name.")


def check_decl(name: str, decl: ToolDecl, reserved: Collection[str]) -> None:
    """`ProjectToolsError` when `decl` cannot be a tool named `name`."""
    if not NAME.match(name):
        raise ProjectToolsError(
            f"tools.toml: {name!r} is not a tool name (lowercase letters, digits, _; 40 at most)"
        )
    if name in reserved:
        raise ProjectToolsError(f"tools.toml: {name} is one of agent-lsp's own tools; rename it")
    if PLACEHOLDER.search(decl.command[0]):
        raise ProjectToolsError(f"tools.toml: {name}: the program (first element) is fixed")
    if "=" in decl.command[0]:  # shown as `X=1 pytest` (pytest), it would run a program "X=1"
        raise ProjectToolsError(
            f"tools.toml: {name}: the program {decl.command[0]!r} reads as a variable "
            'assignment; put variables after "env" (["env", "X=1", ...])'
        )
    for arg, spec in decl.args.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", arg):
            raise ProjectToolsError(f"tools.toml: {name}: {arg!r} is not an argument name")
        if (spec.type == "enum") != bool(spec.enum):
            raise ProjectToolsError(
                f"tools.toml: {name}.args.{arg}: `enum` lists the values of type enum only"
            )
    used = {m for part in decl.command for m in PLACEHOLDER.findall(part)}
    unknown = sorted(used - set(decl.args))
    if unknown:
        raise ProjectToolsError(
            f"tools.toml: {name}: the command names undeclared arguments {', '.join(unknown)}"
        )
    unused = sorted(set(decl.args) - used)
    if unused:
        raise ProjectToolsError(
            f"tools.toml: {name}: arguments {', '.join(unused)} are not in the command"
        )


def parse_project_tools(text: str, reserved: Collection[str]) -> dict[str, ToolDecl]:
    """tools.toml as name -> declaration, each checked (`ProjectToolsError` with the first
    problem); `reserved`: the names of agent-lsp's own tools."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProjectToolsError(f"tools.toml is not valid TOML: {exc}") from exc
    extra = sorted(set(data) - {"tools"})
    if extra:
        raise ProjectToolsError(f"tools.toml: only [tools.NAME] tables, not {', '.join(extra)}")
    tables = data.get("tools", {})
    if not isinstance(tables, dict):
        raise ProjectToolsError("tools.toml: `tools` must be a table of [tools.NAME] tables")
    out: dict[str, ToolDecl] = {}
    for name, table in cast("dict[str, Any]", tables).items():
        try:
            decl = ToolDecl.model_validate(table)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ProjectToolsError(f"tools.toml: {name}.{where}: {first['msg']}") from exc
        check_decl(name, decl, reserved)
        out[name] = decl
    return out


_TYPES: dict[str, Any] = {"string": str, "integer": int, "boolean": bool, "path": str}


def args_model(name: str, decl: ToolDecl) -> type[BaseModel]:
    """The pydantic model of the tool's arguments: its JSON schema is what the model sees. An
    integer is 0 or more (a count, a limit, a line, a port): `-1` as an argv element would be
    read as an option (`kill -1`, `head -n -1`)."""
    fields: dict[str, Any] = {}
    for arg, spec in decl.args.items():
        kind: Any = Literal[tuple(spec.enum or ())] if spec.type == "enum" else _TYPES[spec.type]
        about = spec.description or arg
        limits: dict[str, Any] = {}
        if spec.type == "path":
            about += " (a path inside the project)"
        if spec.type == "integer":
            about += " (0 or more)"
            limits["ge"] = 0
        if spec.required:
            fields[arg] = (kind, Field(description=about, **limits))
        else:
            fields[arg] = (kind | None, Field(None, description=about, **limits))
    title = "".join(part.title() for part in name.split("_")) + "Args"
    return create_model(title, __config__=ConfigDict(extra="forbid"), **fields)
