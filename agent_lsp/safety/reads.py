"""`ReadGuard`: the one check in front of every file the harness reads on the agent's behalf
without a tool call — rules files (AGENTS.md, CLAUDE.md, ...), `state/` files, memory notes and
experiences, checkpoints — and every file it writes under `.agent-lsp/`.

A read is refused (the caller warns and goes on) when the file, resolved, is not inside the
workspace (a link out, anywhere on the path), is a secret file by its name or its target's, or
is hidden by a deny or ask path rule (`SafetyPolicy.hidden`); and when it is not a regular file
(a FIFO would block). Links that stay inside, such as `CLAUDE.md -> AGENTS.md`, are followed.
Writes follow no link at all (`agent_lsp.fileio`) and honour deny path rules."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent_lsp.fileio import UnsafePathError, atomic_write, atomic_write_bytes, ensure_dir
from agent_lsp.safety.paths import PathGuard, Resolved
from agent_lsp.safety.risk import Action

if TYPE_CHECKING:
    from agent_lsp.safety.engine import SafetyPolicy

__all__ = ["CONTEXT_TOOL", "ReadGuard", "Refused", "UnsafePathError"]

CONTEXT_TOOL = "read_file"  # the starting context is read as read_file would read it
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class Refused(OSError):
    """A read (or a write) the guard refused; `reason` says why (never the file's content)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(errno.EACCES, reason, str(path))
        self.reason = reason


class ReadGuard:
    """The guard of one workspace; `policy` (set once a task knows it) adds the path rules.
    Without a policy, links out and secret files are still refused."""

    def __init__(self, root: Path, policy: SafetyPolicy | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self.given = Path(os.path.normpath(root.absolute()))  # as the caller spells paths
        self.policy = policy
        self._paths: PathGuard | None = None

    @property
    def paths(self) -> PathGuard:
        if self.policy is not None:
            return self.policy.guard
        if self._paths is None:
            self._paths = PathGuard(self.root)
        return self._paths

    def describe(self, path: Path) -> Resolved:
        return self.paths.describe(path if path.is_absolute() else self.root / path)

    def refusal(self, path: Path, tool: str = CONTEXT_TOOL) -> str | None:
        """Why `path` may not be read on the agent's behalf; None: it may."""
        res = self.describe(path)
        if not res.in_root:
            inside = self._lexically_inside(path)
            return "a link leading out of the workspace" if inside else "outside the workspace"
        if self.policy is not None:
            return self.policy.hidden(tool, res)
        return "a secret file" if res.secret else None

    def _lexically_inside(self, path: Path) -> bool:
        lexical = Path(os.path.normpath(path if path.is_absolute() else self.root / path))
        return lexical.is_relative_to(self.root) or lexical.is_relative_to(self.given)

    def top(self, path: Path) -> Path:
        """The root as `path` spells it: links are refused from there down."""
        for top in (self.given, self.root):
            if path.is_relative_to(top):
                return top
        raise UnsafePathError(errno.EXDEV, "not inside the workspace", str(path))

    def read_bytes(self, path: Path, tool: str = CONTEXT_TOOL) -> bytes:
        """The bytes of `path` once the guard lets it through. `FileNotFoundError` when it is
        missing, `Refused` when refused, another `OSError` when it cannot be read."""
        if not os.path.lexists(path):
            raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
        reason = self.refusal(path, tool)
        if reason is not None:
            raise Refused(path, reason)
        real = os.path.realpath(path)
        fd = os.open(real, _READ_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(path, "not a regular file")
            if os.path.realpath(path) != real:  # swapped meanwhile: check again, from the top
                raise Refused(path, "the file changed while it was read")
            with os.fdopen(os.dup(fd), "rb") as fh:
                return fh.read()
        finally:
            os.close(fd)

    def folder(
        self,
        path: Path,
        tool: str = CONTEXT_TOOL,
        warnings: list[str] | None = None,
        label: str = "",
        keep: Callable[[Path], bool] = lambda _: True,
    ) -> list[Path]:
        """The entries of a folder that `keep` wants and the guard lets through, sorted by
        name; [] when it is missing or refused itself. Each refused one is a WARN in
        `warnings`, under `label` (default: the folder's name)."""
        if not path.is_dir():
            return []
        reason = self.refusal(path, tool)
        try:
            entries = [] if reason is not None else sorted(filter(keep, path.iterdir()))
        except OSError as exc:
            reason = exc.strerror or "cannot be listed"
            entries = []
        if reason is not None and warnings is not None:
            warnings.append(f"{label or path.name}: not loaded ({reason})")
        out: list[Path] = []
        for entry in entries:
            why = self.refusal(entry, tool)
            if why is None:
                out.append(entry)
            elif warnings is not None:
                warnings.append(f"{label or path.name}/{entry.name}: not loaded ({why})")
        return out

    # ---- writes under .agent-lsp/ --------------------------------------------------------
    def write_refusal(self, path: Path, tool: str | None) -> str | None:
        """A deny path rule against writing `path` for `tool` (a tool the model called:
        `remember`, `update_task`); the harness's own bookkeeping (`tool=None`) has none."""
        if self.policy is None or tool is None:
            return None
        res = self.describe(path)
        for rule in self.policy.rules.of(Action.DENY):
            if rule.command is None and rule.for_tool(tool) and rule.matches_path(res, self.paths):
                return rule.label
        return None

    def write(self, path: Path, text: str, tool: str | None = None) -> None:
        """Atomically, no link anywhere from the workspace root down (`UnsafePathError`), no
        deny path rule for `tool` (`Refused`)."""
        self._check_write(path, tool)
        atomic_write(path, text, within=self.top(path))

    def write_bytes(self, path: Path, data: bytes, tool: str | None = None) -> None:
        """`write` of bytes, exactly as given."""
        self._check_write(path, tool)
        atomic_write_bytes(path, data, within=self.top(path))

    def _check_write(self, path: Path, tool: str | None) -> None:
        reason = self.write_refusal(path, tool)
        if reason is not None:
            raise Refused(path, f"not written: {reason}")

    def mkdir(self, folder: Path) -> None:
        ensure_dir(folder, within=self.top(folder))
