"""Project notes: `.agent-lsp/prompt-notes.md` (appended to the system prompt of every task in
the project) and `.agent-lsp/tool-notes.toml` (`tool_name = "note"`: each note appended to that
tool's description). `agent-lsp improve` writes them; a person may too.

They steer the agent as much as the settings do, so a repository's own notes count only in a
workspace the user trusts (`agent-lsp trust`), like the widening keys of its config."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.memory.layout import Layout
from agent_lsp.safety.reads import Refused

__all__ = ["NotesError", "ProjectNotes", "parse_tool_notes", "read_notes"]

MAX_NOTE_CHARS = 4000  # one note, or the prompt notes as a whole


class NotesError(ValueError):
    """A notes file that cannot be used as written (the reason is the message)."""


@dataclass(frozen=True)
class ProjectNotes:
    prompt: str = ""
    tools: dict[str, str] = field(default_factory=dict[str, str])
    warnings: tuple[str, ...] = ()


def parse_tool_notes(text: str) -> dict[str, str]:
    """`tool-notes.toml` as tool name -> note; `NotesError` saying what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise NotesError(f"tool-notes.toml is not valid TOML: {exc}") from exc
    notes: dict[str, str] = {}
    for name, note in data.items():
        if not isinstance(note, str):
            raise NotesError(f"tool-notes.toml: {name} must be a string (the note), not a table")
        if len(note) > MAX_NOTE_CHARS:
            raise NotesError(f"tool-notes.toml: the note of {name} is over {MAX_NOTE_CHARS} chars")
        if note.strip():
            notes[name] = note.strip()
    return notes


def _read(layout: Layout, path: Path) -> str | None:
    try:
        return layout.reads.read_bytes(path, "").decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise NotesError(f"{layout.rel(path)} is not UTF-8 text") from exc
    except Refused as exc:
        raise NotesError(f"{layout.rel(path)}: {exc.reason}") from exc


def read_notes(root: Path, trusted: bool) -> ProjectNotes:
    """The notes in effect for `root`: none in an untrusted workspace (said in `warnings`
    when there are some), and a file that cannot be used is skipped with a warning."""
    layout = Layout(root)
    warnings: list[str] = []
    prompt, tools = "", {}
    try:
        prompt = (_read(layout, layout.prompt_notes) or "").strip()
    except NotesError as exc:
        warnings.append(f"{exc}; not used")
    try:
        tools = parse_tool_notes(_read(layout, layout.tool_notes) or "")
    except NotesError as exc:
        warnings.append(f"{exc}; not used")
    if not trusted and (prompt or tools):
        warnings.append(
            "the project's notes (.agent-lsp/prompt-notes.md, tool-notes.toml) are not used "
            "until you trust this workspace (agent-lsp trust)"
        )
        return ProjectNotes(warnings=tuple(warnings))
    if len(prompt) > MAX_NOTE_CHARS:
        warnings.append(f"prompt-notes.md is over {MAX_NOTE_CHARS} characters; cut there")
        prompt = prompt[:MAX_NOTE_CHARS]
    return ProjectNotes(prompt, tools, tuple(warnings))
