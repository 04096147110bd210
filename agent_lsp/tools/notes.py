"""`remember` and `update_task`: plain files under .agent-lsp/ that a person can read and edit."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.fileio import atomic_write, read_disk_text
from agent_lsp.messages import ToolResult
from agent_lsp.workspace import Workspace

NOTES = Path(".agent-lsp/memory/notes.md")
TASK = Path(".agent-lsp/state/task/current-task.md")
SECTIONS = ("goal", "progress", "next", "blockers")


class RememberArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str = Field(min_length=1, description="A fact worth keeping, with its reason.")
    tags: list[str] = Field(default_factory=list[str], description="A few keywords.")


class RememberTool:
    name = "remember"
    description = "Keep a note about this project for future tasks (fact + reason)."
    args_model = RememberArgs
    read_only = False

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def run(self, args: RememberArgs) -> ToolResult:
        path = self.workspace.root / NOTES
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
        tags = f" [{', '.join(args.tags)}]" if args.tags else ""
        entry = f"- {stamp}{tags}: {' '.join(args.note.split())}\n"
        await asyncio.to_thread(_append, path, entry)
        return ToolResult.ok(f"noted in {NOTES.as_posix()}", path=NOTES.as_posix())


class UpdateTaskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    section: str = Field(description=f"One of: {', '.join(SECTIONS)}.")
    content: str = Field(description="The new text of that section (replaces the old one).")


class UpdateTaskTool:
    name = "update_task"
    description = "Record the task's goal, progress, next step or blockers (survives restarts)."
    args_model = UpdateTaskArgs
    read_only = False

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def run(self, args: UpdateTaskArgs) -> ToolResult:
        section = args.section.strip().lower()
        if section not in SECTIONS:
            return ToolResult.fail(f"unknown section {args.section!r}; use {', '.join(SECTIONS)}")
        path = self.workspace.root / TASK
        await asyncio.to_thread(_replace_section, path, section, args.content.strip())
        return ToolResult.ok(f"task {section} updated in {TASK.as_posix()}")


def _append(path: Path, entry: str) -> None:
    old = read_disk_text(path) if path.is_file() else "# Project notes\n\n"
    atomic_write(path, old + entry)


def _replace_section(path: Path, section: str, content: str) -> None:
    text = read_disk_text(path) if path.is_file() else "# Current task\n"
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", text, re.S | re.M))
    sections[section] = content + "\n"
    body = "".join(
        f"## {name}\n{sections[name].rstrip()}\n\n" for name in SECTIONS if name in sections
    )
    atomic_write(path, "# Current task\n\n" + body)
