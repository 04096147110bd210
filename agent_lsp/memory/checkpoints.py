"""Checkpoints under `.agent-lsp/checkpoints/`: a task's progress (its conversation, step and
usage) after every step, so a task cut short by a crash or a restart can be resumed; and the
files the agent changed, before and after each step, as content-addressed copies of their
bytes (`objects/`), so a task can be undone step by step. Never the user's git index or branches.
Everything here is read and written through the workspace's `ReadGuard`: never through a link.

A repository can ship this folder: each `progress.json` is signed with this user's key
(`agent_lsp.signing`), and one that is not is ignored with a warning — never resumed, continued
or undone; a snapshot is used only when its bytes still have the digest it is stored under."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import IO, Literal

from pydantic import BaseModel, Field, ValidationError

from agent_lsp.errors import AgentLspError
from agent_lsp.fileio import open_append
from agent_lsp.memory.logs import now_iso
from agent_lsp.messages import ChatMessage, Usage
from agent_lsp.safety.reads import ReadGuard
from agent_lsp.signing import Unsigned, seal, unseal
from agent_lsp.task import Task

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; a checkpoint is never seen as running
    fcntl = None

Status = Literal["running", "interrupted", "finished", "discarded"]
RESUMABLE = ("running", "interrupted")
MAX_SNAPSHOT_BYTES = 5_000_000
KIND = "checkpoint"  # the kind its progress files are signed as


class FileChange(BaseModel):
    path: str
    before: str | None = None  # blob id; None: the file did not exist
    after: str | None = None


class StepRecord(BaseModel):
    step: int
    files: list[FileChange] = Field(default_factory=list[FileChange])
    undone: bool = False


class Checkpoint(BaseModel):
    version: int = 1
    task_id: str
    task: Task
    status: Status = "running"
    session: str = ""
    branch: str = ""
    pid: int = Field(default_factory=os.getpid)
    started: str = Field(default_factory=now_iso)
    updated: str = Field(default_factory=now_iso)
    step: int = 0
    usage: Usage = Field(default_factory=Usage)
    changed_files: list[str] = Field(default_factory=list[str])
    messages: list[ChatMessage] = Field(default_factory=list[ChatMessage])
    steps: list[StepRecord] = Field(default_factory=list[StepRecord])
    outcome: str = ""
    stop_reason: str = ""  # why a finished task stopped (the outcome's stop reason)
    conventions: str = ""  # digest of the project's conventions when the task began
    acknowledged: list[str] = Field(default_factory=list[str])  # conflicts the user let pass


# Why a task may stop short and still go on with the user's hint (`agentLsp.continue`).
CONTINUABLE = frozenset(
    {"loop", "max steps", "model stopped", "token budget", "model error", "conflict"}
)


def not_continuable(cp: Checkpoint, running: bool) -> str | None:
    """Why the task of `cp` cannot be continued (None: it can)."""
    if running:
        return f"task {cp.task_id} is still running: steer it instead (agentLsp.steer)"
    if cp.status == "interrupted":
        return None
    if cp.status == "discarded":
        return f"task {cp.task_id} was cancelled: not continuable; start a new task"
    if cp.status == "running":
        return None  # cut short by a crash, not running anywhere: it can go on
    if cp.stop_reason in CONTINUABLE:
        return None
    what = cp.outcome.split(":", 1)[0] or "finished"
    if what == "completed":
        return f"task {cp.task_id} completed: nothing to continue; start a new task"
    if what == "cancelled":
        return f"task {cp.task_id} was cancelled: not continuable; start a new task"
    return f"task {cp.task_id} ended ({cp.outcome[:120] or what}): not continuable"


class TaskLock:
    """Held while a task runs; the OS drops it when the process dies (even by SIGKILL)."""

    def __init__(self, path: Path, within: Path | None = None) -> None:
        self._fh: IO[str] | None = open_append(path, within)
        if fcntl is not None:
            try:
                fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                self._fh.close()
                self._fh = None
                raise

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class CheckpointStore:
    def __init__(self, folder: Path, reads: ReadGuard | None = None) -> None:
        """`reads`: the workspace's guard (default: one for the folder holding `.agent-lsp`)."""
        self.folder = folder
        self.objects = folder / "objects"
        self.reads = reads or ReadGuard(folder.parent.parent)

    def _progress(self, task_id: str) -> Path:
        return self.folder / task_id / "progress.json"

    def save(self, cp: Checkpoint) -> None:
        cp.updated = now_iso()
        body = cp.model_dump_json().encode("utf-8")
        self.reads.write_bytes(self._progress(cp.task_id), seal(KIND, body))

    def load(self, task_id: str, warnings: list[str]) -> Checkpoint | None:
        path = self._progress(task_id)
        try:
            cp = Checkpoint.model_validate_json(unseal(KIND, self.reads.read_bytes(path, "")))
        except FileNotFoundError:
            return None
        except Unsigned as exc:
            warnings.append(f"checkpoints/{task_id}/progress.json: ignored: {exc}")
            return None
        except (OSError, ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0][:120]
            warnings.append(f"checkpoints/{task_id}/progress.json: unreadable ({first}); ignored")
            return None
        if cp.task_id != task_id:
            warnings.append(f"checkpoints/{task_id}/progress.json: of task {cp.task_id}; ignored")
            return None
        return cp

    def all(self, warnings: list[str]) -> list[Checkpoint]:
        """Every readable checkpoint, oldest first."""
        found: list[Checkpoint] = []
        for child in self.reads.folder(self.folder, ""):
            if child.name != "objects" and (child / "progress.json").is_file():
                cp = self.load(child.name, warnings)
                if cp is not None:
                    found.append(cp)
        return sorted(found, key=lambda c: (c.updated, c.task_id))

    def lock(self, task_id: str) -> TaskLock:
        return TaskLock(self.folder / task_id / "lock", self.reads.top(self.folder))

    def is_running(self, task_id: str) -> bool:
        """Whether some process holds the task's lock right now."""
        try:
            self.lock(task_id).release()
        except OSError:
            return True
        return False

    def pending(self, warnings: list[str]) -> Checkpoint | None:
        """The latest task that was cut short and is not running anywhere."""
        for cp in reversed(self.all(warnings)):
            if cp.status in RESUMABLE and not self.is_running(cp.task_id):
                return cp
        return None

    def stopped(self, task_id: str | None, warnings: list[str]) -> Checkpoint:
        """The task to continue: `task_id` (a unique start of it), else the latest task that
        stopped short; `AgentLspError` with the reason when there is none."""
        found = self.all(warnings)
        if task_id:
            matches = [c for c in found if c.task_id.startswith(task_id)]
            if len(matches) != 1:
                raise AgentLspError(
                    f"no task {task_id} to continue"
                    if not matches
                    else f"{task_id} names {len(matches)} tasks; give more of its id"
                )
            cp = matches[0]
            why = not_continuable(cp, self.is_running(cp.task_id))
            if why is not None:
                raise AgentLspError(why)
            return cp
        for cp in reversed(found):
            if not_continuable(cp, self.is_running(cp.task_id)) is None:
                return cp
        last = found[-1] if found else None
        if last is None:
            raise AgentLspError("no stopped task to continue")
        why = not_continuable(last, self.is_running(last.task_id))
        raise AgentLspError(f"no stopped task to continue ({why})")

    def put(self, data: bytes) -> str:
        """Keep `data` (a file's bytes, exactly) under its SHA-256; the id."""
        digest = hashlib.sha256(data).hexdigest()
        path = self.objects / digest[:2] / digest[2:]
        if not path.exists():
            self.reads.write_bytes(path, data)
        return digest

    def get(self, blob: str) -> bytes | None:
        """The bytes kept under `blob`; None when missing or not what was kept."""
        path = self.objects / blob[:2] / blob[2:]
        try:
            data = self.reads.read_bytes(path, "")
        except (OSError, ValueError):
            return None
        return data if hashlib.sha256(data).hexdigest() == blob else None


def record_change(
    cp: Checkpoint, store: CheckpointStore, step: int, path: str, before: bytes | None, after: bytes
) -> bool:
    """Note that `path` went from `before` to `after` in `step`; False if too big to keep."""
    if len(after) > MAX_SNAPSHOT_BYTES or (before and len(before) > MAX_SNAPSHOT_BYTES):
        return False
    record = cp.steps[-1] if cp.steps and cp.steps[-1].step == step else None
    if record is None:
        record = StepRecord(step=step)
        cp.steps.append(record)
    change = next((c for c in record.files if c.path == path), None)
    if change is None:
        change = FileChange(path=path, before=store.put(before) if before is not None else None)
        record.files.append(change)
    change.after = store.put(after)
    return True


def undoable(cp: Checkpoint, steps: int | None) -> list[StepRecord]:
    """The last `steps` step records not undone yet (all of them for None), latest first."""
    todo = [s for s in reversed(cp.steps) if not s.undone and s.files]
    return todo if steps is None else todo[:steps]


def remove_file(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
