"""`remember` and `update_task`: plain files under .agent-lsp/ that a person can read and edit.

The notes are loaded into every starting context (with `state/project/*.md`); the task file is
what the context rebuild after a compaction or a restart gives back to the agent. Both are
written by the harness through the workspace's `ReadGuard` (not through `edit_file`, which
never writes `.agent-lsp/`): never through a link, never against a deny path rule."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.memory.layout import Layout
from agent_lsp.memory.state import ALIASES, SECTIONS, write_task_section
from agent_lsp.messages import ToolResult
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.reads import ReadGuard

NOTES = Path(".agent-lsp/memory/notes.md")
TASK = Path(".agent-lsp/state/task/current-task.md")
NOTES_HEAD = "# Project notes\n\n"


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
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
        tags = f" [{', '.join(args.tags)}]" if args.tags else ""
        entry = f"- {stamp}{tags}: {' '.join(args.note.split())}\n"
        try:
            await asyncio.to_thread(_append, self.workspace.reads, entry)
        except OSError as exc:
            return ToolResult.fail(f"not noted: {_why(self.workspace, exc)}")
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
        layout = _layout(self.workspace)
        try:
            await asyncio.to_thread(write_task_section, layout, section, args.content.strip())
        except OSError as exc:
            return ToolResult.fail(f"task not updated: {_why(self.workspace, exc)}")
        return ToolResult.ok(f"task {section} updated in {TASK.as_posix()}", path=TASK.as_posix())


def _layout(workspace: Workspace) -> Layout:
    layout = Layout(workspace.root)
    layout.reads.policy = workspace.engine  # the task's path rules
    return layout


def _append(reads: ReadGuard, entry: str) -> None:
    path = reads.root / NOTES
    try:
        old = reads.read_bytes(path, "remember").decode("utf-8", errors="replace")
    except FileNotFoundError:
        old = NOTES_HEAD
    reads.write(path, (old or NOTES_HEAD) + entry, "remember")


def _why(workspace: Workspace, exc: OSError) -> str:
    """Which part was refused and why (a link, a deny rule), relative to the root."""
    path = Path(exc.filename) if exc.filename else workspace.root / ".agent-lsp"
    where = path.relative_to(workspace.root) if path.is_relative_to(workspace.root) else path
    return f"{where.as_posix()}: {exc.strerror or exc}"
