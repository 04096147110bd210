"""An improvement: changes to the project's `.agent-lsp/config.toml` keys, lines appended to
`.agent-lsp/prompt-notes.md` and notes in `.agent-lsp/tool-notes.toml`, and the guard that
refuses what an improvement may never touch.

The guard measures each key with the table the project config lives by
(`agent_lsp.config.settings.UNTRUSTED_RULES`): a key a repository may not change at all, or a
value that would widen the one in effect, is refused; so are the model endpoint, the
permission level, the sandbox and extra roots outright, and the policy and the trust list,
which are not settings at all."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agent_lsp.config.schema import Settings
from agent_lsp.config.testargs import unsafe_test_args
from agent_lsp.config.untrusted import only_restricts, untrusted_rule
from agent_lsp.tools import RESERVED_NAMES
from agent_lsp.tools.project_spec import ProjectToolsError, ToolDecl, check_decl

__all__ = [
    "ConfigChange",
    "ImprovementPatch",
    "ProjectToolChange",
    "ToolNote",
    "key_path",
    "refusals",
]

Value = bool | int | float | str | list[str] | None

# Never changed by an improvement, whatever the rule table says, each with its reason.
_NEVER: dict[str, str] = {
    "model": "the model and its endpoint (which receives your API key) are yours to set",
    "permissionLevel": "the permission level is yours to set (agent-lsp never raises it)",
    "sandbox": "the sandbox settings are yours to set",
    "extraRoots": "the folders tools may reach are yours to set",
    "policy": "permission rules (.agent-lsp/policy.toml) are never changed by an improvement",
    "trust": "trust is given only by you (agent-lsp trust)",
    "mcp": "MCP servers come only from your user config or an ACP client",
}


class ConfigChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str = Field(
        description="A setting of .agent-lsp/config.toml as a dotted camelCase path, e.g. "
        "`tests.timeout` or `compaction.task` (docs/configuration.md lists them)."
    )
    value: Value = Field(description="Its new value; null removes the key from the file.")


class ToolNote(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool: str = Field(description="The tool's name, e.g. `run_tests`.")
    note: str = Field(
        description="The note appended to that tool's description for this project (an "
        "empty note removes it)."
    )


class ProjectToolChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="The tool's name (lowercase, digits, _), e.g. `compose_up`.")
    tool: ToolDecl | None = Field(
        description="Its declaration in .agent-lsp/tools.toml (a new one or the whole new "
        "form of an existing one); null removes the tool."
    )


class ImprovementPatch(BaseModel):
    """What `propose_improvement` takes, and what the log keeps."""

    model_config = ConfigDict(extra="forbid")
    summary: str = Field(min_length=1, description="One line: what the change does and why.")
    config: list[ConfigChange] = Field(
        default=[], description="Settings to set in .agent-lsp/config.toml."
    )
    prompt_note: str = Field(
        default="",
        description="Text appended to .agent-lsp/prompt-notes.md, which ends the system prompt "
        "of every task in this project (a short instruction, in your words).",
    )
    tool_notes: list[ToolNote] = Field(
        default=[], description="Notes for single tools, in .agent-lsp/tool-notes.toml."
    )
    project_tools: list[ProjectToolChange] = Field(
        default=[],
        description="Project tools to add, change or remove in .agent-lsp/tools.toml: a named "
        "command with typed arguments that becomes a tool (e.g. `docker compose up -d "
        "{service}`), run under the user's permission rules.",
    )

    def touches_tests(self) -> bool:
        return any(key_path(c.key)[:1] == ("tests",) for c in self.config)


def key_path(key: str) -> tuple[str, ...]:
    """`tests.run_on_save` -> ("tests", "runOnSave")."""
    return tuple(to_camel(part) if "_" in part else part for part in key.strip().split("."))


def _leaf(path: tuple[str, ...]) -> bool:
    """Is `path` a setting (not a section, not unknown)?"""
    model: type[BaseModel] = Settings
    for at, part in enumerate(path):
        fields = {f.alias or to_camel(n): f for n, f in model.model_fields.items()}
        field = fields.get(part)
        if field is None:
            return False
        kind = field.annotation
        sub = isinstance(kind, type) and issubclass(kind, BaseModel)
        if at == len(path) - 1:
            return not sub
        if not sub:
            return False
        model = kind  # pyright: ignore[reportAssignmentType]
    return False


def _current(settings: Settings, path: tuple[str, ...]) -> Any:
    node: Any = settings.model_dump(mode="json", by_alias=True)
    for part in path:
        node = node[part]
    return node


def refusals(patch: ImprovementPatch, settings: Settings) -> list[str]:
    """Why `patch` may not be applied where `settings` are in effect (empty: it may)."""
    out: list[str] = []
    for change in patch.config:
        path = key_path(change.key)
        dotted = ".".join(path)
        if path[0] in _NEVER:
            out.append(f"{dotted}: refused: {_NEVER[path[0]]}")
            continue
        if not _leaf(path):
            out.append(f"{dotted}: not a setting (docs/configuration.md lists them)")
            continue
        rule = untrusted_rule(path)
        unsafe = (
            unsafe_test_args([str(v) for v in change.value])
            if (rule == "args" and isinstance(change.value, list))
            else None
        )
        if unsafe is not None:
            out.append(f"{dotted}: refused: {unsafe} (only your own settings may)")
        elif rule == "same":
            out.append(f"{dotted}: refused: a project's config may not change it")
        elif change.value is None and rule != "free":
            out.append(f"{dotted}: refused: removing it could widen what it allows")
        elif change.value is not None and not only_restricts(
            path, change.value, _current(settings, path)
        ):
            out.append(
                f"{dotted}: refused: {change.value!r} would widen it (now "
                f"{_current(settings, path)!r}); only your own settings may"
            )
    seen: set[str] = set()
    for note in patch.tool_notes:
        if note.tool in seen:
            out.append(f"tool note {note.tool}: given twice")
        seen.add(note.tool)
    named: set[str] = set()
    for change in patch.project_tools:
        if change.name in named:
            out.append(f"project tool {change.name}: given twice")
        named.add(change.name)
        if change.tool is None:
            continue
        try:
            check_decl(change.name, change.tool, RESERVED_NAMES)
        except ProjectToolsError as exc:
            out.append(f"project tool {exc}".replace("project tool tools.toml: ", "project tool "))
    if not (patch.config or patch.prompt_note.strip() or patch.tool_notes or patch.project_tools):
        out.append("the patch changes nothing")
    return out
