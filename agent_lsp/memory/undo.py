"""Undo a task step by step from its file snapshots (the files' bytes, put back exactly), through
the editor when a file is open.

An undo writes (and deletes) only what the agent's file tools could have written: a file inside
the workspace, never `.git`, `.agent-lsp/` or the editor settings (`Workspace.check_writable`,
the file tools' own guard) — checked for every file before anything changes, even for a
checkpoint this user's agent-lsp signed."""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from agent_lsp.errors import AgentLspError, WorkspaceError
from agent_lsp.memory.checkpoints import Checkpoint, CheckpointStore, remove_file, undoable
from agent_lsp.project.workspace import Workspace


class UndoReport(BaseModel):
    task_id: str
    steps: list[int] = Field(default_factory=list[int])
    restored: list[str] = Field(default_factory=list[str])
    deleted: list[str] = Field(default_factory=list[str])

    def message(self) -> str:
        if not self.steps:
            return f"task {self.task_id}: nothing to undo"
        parts = [
            f"undid step{'s' if len(self.steps) > 1 else ''} "
            f"{', '.join(map(str, self.steps))} of task {self.task_id}"
        ]
        if self.restored:
            parts.append(f"restored {', '.join(self.restored)}")
        if self.deleted:
            parts.append(f"deleted {', '.join(self.deleted)}")
        return "; ".join(parts)


def _current(workspace: Workspace, rel: str) -> bytes | None:
    path = workspace.resolve(rel)
    if path in workspace.channel.buffers() or path.is_file():
        return workspace.read_bytes(path)
    return None


async def undo_steps(
    cp: Checkpoint, store: CheckpointStore, workspace: Workspace, steps: int | None, force: bool
) -> UndoReport:
    """Revert the last `steps` steps (None: all), latest first. Refuses, changing nothing, when
    a file no longer holds what the agent left there (unless `force`)."""
    todo = undoable(cp, steps)
    report = UndoReport(task_id=cp.task_id)
    if not todo:
        return report
    state: dict[str, bytes | None] = {}  # what each file holds as the undo goes back in time
    for record in todo:
        for change in record.files:
            if change.before is not None and store.get(change.before) is None:
                raise AgentLspError(f"the snapshot of {change.path} is missing; cannot undo")
            if change.path not in state:
                try:
                    workspace.check_writable(workspace.resolve(change.path))
                    state[change.path] = _current(workspace, change.path)
                except WorkspaceError as exc:
                    raise AgentLspError(f"cannot undo {change.path}: {exc}") from exc
            expected = store.get(change.after) if change.after else None
            if state[change.path] != expected and not force:
                raise AgentLspError(
                    f"{change.path} changed after step {record.step}; nothing undone "
                    "(use --force to overwrite)"
                )
            state[change.path] = store.get(change.before) if change.before else None
    for record in todo:
        for change in reversed(record.files):
            path = workspace.resolve(change.path)
            if change.before is None:
                workspace.check_writable(path)
                await asyncio.to_thread(remove_file, path)
                report.deleted.append(change.path)
            else:
                data = store.get(change.before) or b""
                await workspace.write_bytes(path, data, f"agent-lsp: undo step {record.step}")
                report.restored.append(change.path)
        record.undone = True
        report.steps.append(record.step)
    await asyncio.to_thread(store.save, cp)
    return report
