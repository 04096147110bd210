"""`remember` and `update_task`: plain files under .agent-lsp/ that a person can read and edit.

The notes are loaded into every starting context (with `state/project/*.md`); the task file is
what the context rebuild after a compaction or a restart gives back to the agent."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.fileio import atomic_write, read_disk_text
from agent_lsp.memory.state import ALIASES, SECTIONS, write_task_section
from agent_lsp.messages import ToolResult
from agent_lsp.workspace import Workspace

NOTES = Path(".agent-lsp/memory/notes.md")
TASK = Path(".agent-lsp/state/task/current-task.md")


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
        section = ALIASES.get(args.section.strip().lower())
        if section is None:
            return ToolResult.fail(f"unknown section {args.section!r}; use {', '.join(SECTIONS)}")
        path = self.workspace.root / TASK
        await asyncio.to_thread(write_task_section, path, section, args.content.strip())
        return ToolResult.ok(f"task {section} updated in {TASK.as_posix()}", path=TASK.as_posix())


def _append(path: Path, entry: str) -> None:
    old = read_disk_text(path) if path.is_file() else "# Project notes\n\n"
    atomic_write(path, old + entry)
