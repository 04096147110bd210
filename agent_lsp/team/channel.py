"""The editor seen by one role run: its progress named by role and step, and, for a worker,
every write under a per-file lock after a hash check.

A write is stale when the file is no longer the text this worker last read, or, not read by
it, when another worker wrote it since this step began (or it changed since the step began, for
the files the step names). It is refused (the model sees an error result) and the step is
marked for re-planning.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_lsp.errors import EditRejectedError
from agent_lsp.fileio import read_disk_text, text_hash
from agent_lsp.messages import AgentEvent, ToolResult
from agent_lsp.project.workspace import Workspace
from agent_lsp.seams import EditorChannel


class WriteLocks:
    """One asyncio lock per file, shared by the workers of a task."""

    def __init__(self) -> None:
        self._locks: dict[Path, asyncio.Lock] = {}
        self.versions: dict[Path, int] = {}  # writes by the team, per file

    def of(self, path: Path) -> asyncio.Lock:
        return self._locks.setdefault(path.resolve(), asyncio.Lock())

    def bump(self, path: Path) -> None:
        resolved = path.resolve()
        self.versions[resolved] = self.versions.get(resolved, 0) + 1


def current_hash(channel: EditorChannel, path: Path) -> str | None:
    """The hash of the file's text as the editor shows it; None when there is no file."""
    buffered = channel.buffers().get(path)
    if buffered is not None:
        return text_hash(buffered)
    try:
        return text_hash(read_disk_text(path)) if path.is_file() else None
    except (OSError, ValueError):
        return None


class RoleChannel:
    """Wraps the task's channel for one role run (`label` e.g. "worker s1")."""

    def __init__(
        self,
        inner: EditorChannel,
        label: str,
        locks: WriteLocks | None = None,
        start_hashes: Mapping[Path, str | None] | None = None,
        only: Callable[[str], bool] | None = None,
    ) -> None:
        self.inner = inner
        self.label = label
        self.locks = locks
        self.start_hashes = dict(start_hashes or {})
        self.start_versions = dict(locks.versions) if locks is not None else {}
        self.workspace: Workspace | None = None  # set once the role's agent exists
        self.stale: str | None = None  # why a write was refused
        self.only = only  # the files this role may write (the tester: test files), by path
        self.results: list[tuple[str, ToolResult]] = []  # the run's tool results, once done
        self.words = ""  # the model's last answer, once done

    def buffers(self) -> Mapping[Path, str]:
        return self.inner.buffers()

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        if self.locks is None:
            raise EditRejectedError(f"{self.label}: this role does not write files")
        rel = self.workspace.relative(path) if self.workspace is not None else str(path)
        if self.only is not None and not self.only(rel):
            raise EditRejectedError(f"{self.label}: writes test files only, not {rel}")
        async with self.locks.of(path):
            self._check_fresh(path, self.locks)
            await self.inner.apply_edit(path, new_text, label)
            self.locks.bump(path)

    def _check_fresh(self, path: Path, locks: WriteLocks) -> None:
        resolved = path.resolve()
        now = current_hash(self.inner, resolved)
        if self.workspace is not None and resolved in self.workspace.read_hashes:
            fresh = self.workspace.read_hashes[resolved] == now
        elif locks.versions.get(resolved, 0) != self.start_versions.get(resolved, 0):
            fresh = False  # another step wrote it after this one began, unseen by this one
        elif resolved in self.start_hashes:
            fresh = self.start_hashes[resolved] == now
        else:
            return  # neither read nor named by the step nor written by the team
        if fresh:
            return
        rel = self.workspace.relative(resolved) if self.workspace is not None else str(path)
        self.stale = f"a stale write to {rel} was refused: another step changed it meanwhile"
        raise EditRejectedError(f"{self.stale}; stop here, the step will be planned again")

    async def report(self, event: AgentEvent) -> None:
        message = f"[{self.label}] {event.message}"
        data = {**event.data, "role": self.label.split(" ")[0], "team_step": self.label}
        await self.inner.report(event.model_copy(update={"message": message, "data": data}))

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        return await self.inner.ask(f"[{self.label}] {question}", options)
