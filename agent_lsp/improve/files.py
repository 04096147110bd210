"""The files an improvement changes, before and after: `.agent-lsp/config.toml` (a new one
written with camelCase keys; an existing one edited line by line, `agent_lsp.improve.tomledit`:
its comments, order and other lines kept),
`prompt-notes.md` (appended to) and `tool-notes.toml` (one `tool = "note"` line per tool)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel
from pydantic.alias_generators import to_snake

from agent_lsp.errors import AgentLspError
from agent_lsp.improve.patch import ImprovementPatch, key_path
from agent_lsp.improve.tomledit import TomlEditError, edit_toml
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.notes import NotesError, parse_tool_notes
from agent_lsp.safety.reads import Refused
from agent_lsp.tools import RESERVED_NAMES
from agent_lsp.tools.project_spec import ProjectToolsError, parse_project_tools

__all__ = ["FileChange", "ImprovementError", "read_current", "render"]

CONFIG_HEAD = "# agent-lsp project settings (docs/configuration.md); edited by agent-lsp improve\n"
NOTES_HEAD = "# Notes appended to a tool's description in this project (agent-lsp improve)\n"
TOOLS_HEAD = "# Project tools (docs/memory.md); edited by agent-lsp improve\n"


class ImprovementError(AgentLspError):
    """An improvement refused or rolled back; the message says why."""


class FileChange(BaseModel):
    path: str  # relative to the project root
    before: str | None  # None: the file did not exist
    after: str | None


def read_current(layout: Layout, path: Path) -> str | None:
    try:
        return layout.reads.read_bytes(path, "").decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ImprovementError(f"{layout.rel(path)} is not UTF-8 text; fix it first") from exc
    except Refused as exc:
        raise ImprovementError(f"{layout.rel(path)}: {exc.reason}") from exc


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in cast("list[object]", value)) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string


def dump_toml(data: dict[str, Any], at: tuple[str, ...] = ()) -> str:
    """A settings table as TOML: its values, then each sub-table as `[a.b]`."""
    lines = [f"{k} = {_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    text = ""
    if lines and at:
        text += f"\n[{'.'.join(at)}]\n"
    text += "".join(f"{line}\n" for line in lines)
    for key, sub in data.items():
        if isinstance(sub, dict):
            text += dump_toml(cast("dict[str, Any]", sub), (*at, key))
    return text


def _config(patch: ImprovementPatch, before: str | None) -> str:
    """The file after `patch`: a new one written whole; a person's edited line by line (every
    other line, comment and the order kept), or refused when that cannot be done."""
    if before is None:
        data: dict[str, Any] = {}
        for change in patch.config:
            if change.value is not None:
                keys = key_path(change.key)
                node = data
                for part in keys[:-1]:
                    node = node.setdefault(part, {})
                node[keys[-1]] = change.value
        return CONFIG_HEAD + "\n" + dump_toml(data).lstrip("\n")
    try:
        intended = tomllib.loads(before)
    except tomllib.TOMLDecodeError as exc:
        raise ImprovementError(
            f".agent-lsp/config.toml cannot be read ({exc}); fix it first"
        ) from exc
    changes: list[tuple[tuple[str, ...], Any]] = []
    for change in patch.config:
        keys = key_path(change.key)
        node = intended
        for part in keys[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ImprovementError(f".agent-lsp/config.toml: {part} is not a table; fix it")
        spellings = [k for k in (keys[-1], to_snake(keys[-1])) if k in node] or [keys[-1]]
        for spelling in spellings:
            node.pop(spelling, None)
        if change.value is not None:
            node[spellings[0]] = change.value
        changes.append((keys, change.value))
    try:
        return edit_toml(before, changes, _value, intended)
    except TomlEditError as exc:
        raise ImprovementError(
            f"not applied: .agent-lsp/config.toml: {exc}; set it by hand or write the key on "
            "a line of its own under its [table]"
        ) from exc


def render(root: Path, patch: ImprovementPatch) -> list[FileChange]:
    """The files `patch` changes (only those that change), their text before and after."""
    layout = Layout(root)
    out: list[FileChange] = []
    if patch.config:
        before = read_current(layout, layout.config)
        out.append(
            FileChange(path=layout.rel(layout.config), before=before, after=_config(patch, before))
        )
    if patch.prompt_note.strip():
        before = read_current(layout, layout.prompt_notes)
        head = before or ""
        head += "\n" if head and not head.endswith("\n") else ""
        after = head + patch.prompt_note.strip() + "\n"
        out.append(FileChange(path=layout.rel(layout.prompt_notes), before=before, after=after))
    if patch.tool_notes:
        before = read_current(layout, layout.tool_notes)
        try:
            notes = parse_tool_notes(before or "")
        except NotesError as exc:
            raise ImprovementError(f"{exc}; fix it first") from exc
        for note in patch.tool_notes:
            if note.note.strip():
                notes[note.tool] = note.note.strip()
            else:
                notes.pop(note.tool, None)
        lines = "".join(f"{name} = {_value(text)}\n" for name, text in sorted(notes.items()))
        out.append(
            FileChange(path=layout.rel(layout.tool_notes), before=before, after=NOTES_HEAD + lines)
        )
    if patch.project_tools:
        out.append(_tools_change(layout, patch))
    return [change for change in out if change.after != change.before]


def _tools_change(layout: Layout, patch: ImprovementPatch) -> FileChange:
    before = read_current(layout, layout.tools_file)
    try:
        declared = parse_project_tools(before or "", RESERVED_NAMES)
    except ProjectToolsError as exc:
        raise ImprovementError(f"{exc}; fix it first") from exc
    tables: dict[str, Any] = {n: d.model_dump(exclude_none=True) for n, d in declared.items()}
    for change in patch.project_tools:
        if change.tool is None:
            tables.pop(change.name, None)
        else:
            tables[change.name] = change.tool.model_dump(exclude_none=True)
    after = TOOLS_HEAD + dump_toml({"tools": tables}) if tables else None
    return FileChange(path=layout.rel(layout.tools_file), before=before, after=after)
