"""Where everything lives under `.agent-lsp/`: plain files a person can read and edit.

Every file the memory reads or writes there goes through the layout's `ReadGuard` (`reads`):
no link out of the workspace, no secret file, the path rules of the task's policy."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from agent_lsp.safety.reads import ReadGuard, Refused
from agent_lsp.signing import user_folder

AGENT_DIR = ".agent-lsp"
# Local, per-machine parts stay out of git; state/project/ and memory/*.md may be shared.
IGNORED = (
    "logs/",
    "checkpoints/",
    "state/task/",
    "state/session/",
    "state/team/",
    "memory/index.sqlite*",
    "proposals/",
    "cache/",
    "improvements/",
)
SESSION_KEEP_SECONDS = 14 * 24 * 3600


@dataclass(frozen=True)
class Layout:
    """The `.agent-lsp/` folder of one project."""

    root: Path

    @cached_property
    def reads(self) -> ReadGuard:
        """The guard of every read and write here; `ProjectMemory.begin` gives it the task's
        policy (path rules)."""
        return ReadGuard(self.root)

    @property
    def base(self) -> Path:
        return self.root / AGENT_DIR

    @property
    def state_project(self) -> Path:
        return self.base / "state" / "project"

    @property
    def state_task(self) -> Path:
        return self.base / "state" / "task"

    @property
    def state_session(self) -> Path:
        return self.base / "state" / "session"

    @property
    def task_file(self) -> Path:
        return self.state_task / "current-task.md"

    @property
    def task_meta(self) -> Path:
        return self.state_task / "task.json"

    @property
    def initd(self) -> Path:
        return self.base / "init.d"

    @property
    def memory(self) -> Path:
        return self.base / "memory"

    @property
    def notes(self) -> Path:
        return self.memory / "notes.md"

    @property
    def index(self) -> Path:
        """The experiences' search index: derived from the files, and kept outside the project
        in this user's folder (`agent_lsp.signing.user_folder`), one per workspace, so an index
        a repository ships (`memory/index.sqlite`) is never opened."""
        real = os.path.realpath(self.root)
        key = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return user_folder() / "memory" / key / "index.sqlite"

    @property
    def config(self) -> Path:
        """The project's settings (`agent_lsp.config.settings.PROJECT_CONFIG`)."""
        return self.base / "config.toml"

    @property
    def prompt_notes(self) -> Path:
        """Notes appended to the system prompt of every task here (trusted workspaces)."""
        return self.base / "prompt-notes.md"

    @property
    def tool_notes(self) -> Path:
        """`tool-name = "note"` lines: each note appended to that tool's description."""
        return self.base / "tool-notes.toml"

    @property
    def tools_file(self) -> Path:
        """Project tools: `[tools.NAME]` commands with typed arguments (trusted workspaces)."""
        return self.base / "tools.toml"

    @property
    def improvements(self) -> Path:
        """The log of `agent-lsp improve`: one JSON file per change (local, not shared)."""
        return self.base / "improvements"

    @property
    def logs(self) -> Path:
        return self.base / "logs"

    @property
    def checkpoints(self) -> Path:
        return self.base / "checkpoints"

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def mount(self) -> None:
        """Create the folders and the .gitignore (idempotent); prune old session scratch.
        A link on the way (a linked `.agent-lsp`, `state` ...) raises `UnsafePathError`."""
        for folder in (self.state_project, self.state_task, self.state_session, self.memory):
            self.reads.mkdir(folder)
        ensure_gitignore(self.reads, self.base / ".gitignore")
        prune_sessions(self.state_session)


def ensure_gitignore(reads: ReadGuard, path: Path) -> None:
    try:
        old = reads.read_bytes(path, "").decode("utf-8", errors="replace")
    except (FileNotFoundError, Refused):
        old = ""
    have = {line.strip() for line in old.splitlines()}
    missing = [line for line in IGNORED if line not in have]
    if not missing:
        return
    head = old if old.endswith("\n") or not old else old + "\n"
    if not old:
        head = "# agent-lsp: local state, logs and checkpoints stay out of git\n"
    reads.write(path, head + "".join(f"{line}\n" for line in missing))


def prune_sessions(folder: Path, keep: float = SESSION_KEEP_SECONDS) -> None:
    cutoff = time.time() - keep
    with contextlib.suppress(OSError):
        for child in folder.iterdir():
            with contextlib.suppress(OSError):
                if child.is_dir() and not child.is_symlink() and child.stat().st_mtime < cutoff:
                    shutil.rmtree(child, ignore_errors=True)
