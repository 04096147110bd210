"""The agent's view of the project: open buffers are the truth for open files, disk for the rest.

Every path goes through the safety layer's `PathGuard` (symlinks, `..`, `~`, absolute, Windows
device and UNC forms): it must stay inside the workspace or an extra root. Secret files need
the user's permission (`resolve_readable` asks); deny path rules refuse; listings and searches
skip what a read would have to ask about (`hidden`); git internals, `.agent-lsp/` and editor
settings are never written. `reads` is the same guard for what the harness itself reads into
the prompt or writes under `.agent-lsp/`."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path, PurePosixPath

from agent_lsp.errors import WorkspaceError
from agent_lsp.fileio import (
    EncodingError,
    atomic_write_bytes,
    decode_text,
    encode_text,
    file_encoding,
    read_disk_text,
    text_hash,
)
from agent_lsp.safety.engine import SafetyPolicy
from agent_lsp.safety.paths import PathError, PathGuard, Resolved
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.reads import ReadGuard
from agent_lsp.safety.risk import Action
from agent_lsp.seams import EditorChannel


class Workspace:
    """Resolves paths inside the root, reads through the editor, and writes through it.
    `policy` (default: level L2, no rules) decides and asks about files that need it."""

    def __init__(
        self, root: Path, channel: EditorChannel, policy: CommandPolicy | None = None
    ) -> None:
        self.root = root.resolve()
        self.channel = channel
        self.policy = policy or CommandPolicy(channel, engine=SafetyPolicy(self.root))
        self.granted: set[Path] = set()  # secret files the user let the agent read
        self.read_hashes: dict[Path, str] = {}
        self.looked_at: set[str] = set()  # files whose text the model was shown (relative)
        self.created: set[str] = set()  # files the agent wrote that did not exist before
        self.changed_files: list[str] = []
        self.edit_count = 0
        self._written: dict[Path, str] = {}  # the hash of the text the agent last wrote there

    @property
    def engine(self) -> SafetyPolicy:
        return self.policy.engine_for(self.root)

    @property
    def guard(self) -> PathGuard:
        return self.engine.guard

    @property
    def reads(self) -> ReadGuard:
        """The guard of the harness's own reads and `.agent-lsp/` writes, with this policy."""
        return ReadGuard(self.root, self.engine)

    def describe(self, relative: str, tool: str = "") -> Resolved:
        """The resolved path and its flags; refused forms, escapes and deny rules raise."""
        if not relative.strip():
            raise WorkspaceError("empty path")
        relative = self._from_root(relative)
        try:
            res = self.guard.resolve(relative)
        except PathError as exc:
            raise WorkspaceError(str(exc)) from exc
        if not res.inside:
            raise WorkspaceError(f"{relative}: outside the workspace {self.root}")
        for rule in self.engine.rules.of(Action.DENY):
            if rule.path is not None and rule.for_tool(tool) and rule.matches_path(res, self.guard):
                raise WorkspaceError(f"{relative}: denied by {rule.label}")
        return res

    def _from_root(self, relative: str) -> str:
        """A relative path a model wrote as seen from the folder above the root ("calc/x.py"
        in the project calc, small models do): the root's own name dropped, when the project
        has no folder of that name."""
        parts = PurePosixPath(relative.replace("\\", "/")).parts
        if len(parts) < 2 or parts[0] != self.root.name or (self.root / parts[0]).exists():
            return relative
        return "/".join(parts[1:])

    def resolve(self, relative: str) -> Path:
        """An absolute path inside the workspace (or an extra root); anything that escapes
        it is refused. Secret files resolve, but are only read once granted."""
        return self.describe(relative).path

    async def resolve_readable(self, relative: str, tool: str = "read_file") -> Path:
        """`resolve`, then the user's permission for a secret file (or a path ask rule)."""
        res = self.describe(relative, tool)
        if res.path in self.granted:
            return res.path
        decision = await self.policy.check_file(tool, res, write=False)
        if not decision.allowed:
            raise WorkspaceError(f"{relative}: not read ({decision.decided_by})")
        if res.secret:
            self.granted.add(res.path)
        return res.path

    def hidden(self, path: Path, tool: str = "list_files") -> bool:
        """Skipped silently by listings and searches: links leading out, secret files, and
        what a deny or ask path rule covers for `tool` (for a search, also for read_file: a
        search shows the text)."""
        res = self.guard.describe(path)
        tools = (tool, "read_file") if tool == "search_text" else (tool,)
        return not res.inside or any(self.engine.hidden(t, res) is not None for t in tools)

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def _check_secret(self, path: Path) -> None:
        if path not in self.granted and self.guard.describe(path).secret:
            raise WorkspaceError(
                f"{self.relative(path)}: a secret file; read it with read_file first "
                "(which asks the user)"
            )

    async def fetch(self, path: Path) -> None:
        """The editor's current text of `path` asked for, where the channel reads on demand
        (an ACP client's `fs/read_text_file`); nothing to do for an LSP editor, whose buffers
        arrive as the user types."""
        fetch = getattr(self.channel, "fetch_buffer", None)
        if callable(fetch):
            done = fetch(path)
            if inspect.isawaitable(done):
                await done

    def read_bytes(self, path: Path) -> bytes:
        """The file's bytes; for a file open in the editor, the buffer's text as the file
        would hold it (in the file's encoding where that can hold it, else UTF-8)."""
        self._check_secret(path)
        buffered = self.channel.buffers().get(path)
        if buffered is None:
            return path.read_bytes()
        try:
            return encode_text(buffered, file_encoding(path))
        except EncodingError:
            return buffered.encode("utf-8", "surrogatepass")

    def read_text(self, path: Path) -> str:
        """The buffer's text if the file is open in the editor, else the file on disk."""
        self._check_secret(path)
        buffered = self.channel.buffers().get(path)
        if buffered is not None:
            return buffered
        if not path.is_file():
            raise WorkspaceError(f"{self.relative(path)}: no such file")
        return read_disk_text(path)

    def note_read(self, path: Path, text: str, *, looked: bool = True) -> None:
        """The model was shown `text` as `path` holds it (an edit then checks it is current);
        `looked`: it counts as the model's look at the file (not a file of its own changes
        the harness shows it back)."""
        self.read_hashes[path] = text_hash(text)
        if looked:
            self.looked_at.add(self.relative(path))

    def _note_written(self, path: Path, text: str, existed: bool) -> None:
        self.read_hashes[path] = text_hash(text)
        self._written[path] = text_hash(text)
        self.edit_count += 1
        rel = self.relative(path)
        if not existed:
            self.created.add(rel)
        if rel not in self.changed_files:
            self.changed_files.append(rel)

    def wrote_last(self, path: Path, text: str) -> bool:
        """`text` is what the agent itself last wrote to `path`: nobody changed the file since
        (an undo of the agent's edit puts back only the agent's own text, never the user's)."""
        return self._written.get(path) == text_hash(text)

    def changed_since_read(self, path: Path, text: str) -> bool:
        seen = self.read_hashes.get(path)
        return seen is not None and seen != text_hash(text)

    def check_writable(self, path: Path) -> None:
        """The agent never writes git internals, the policy or project config files, or
        anything outside the workspace."""
        res = self.guard.describe(path)
        if res.protected:
            raise WorkspaceError(f"{self.relative(path)}: the agent may not write this file")
        if not res.inside:
            raise WorkspaceError(f"{self.relative(path)}: outside the workspace {self.root}")

    async def write_text(self, path: Path, new_text: str, label: str) -> None:
        self.check_writable(path)
        tool = "write_file" if "create" in label else "edit_file"
        decision = await self.policy.check_file(tool, self.guard.describe(path), write=True)
        if not decision.allowed:
            raise WorkspaceError(f"{self.relative(path)}: not written ({decision.decided_by})")
        existed = path in self.channel.buffers() or await asyncio.to_thread(path.exists)
        await self.channel.apply_edit(path, new_text, label)
        self._note_written(path, new_text, existed)

    async def write_bytes(self, path: Path, data: bytes, label: str) -> None:
        """Put exactly `data` back in the file (an undo): through the editor as text when the
        file is open there or when writing the text in the file's encoding gives these bytes
        again; otherwise straight to disk, byte for byte."""
        text, enc = decode_text(data)
        try:
            same = enc is not None and file_encoding(path) == enc
        except EncodingError:
            same = False
        if same or path in self.channel.buffers():
            await self.write_text(path, text, label)
            return
        self.check_writable(path)
        decision = await self.policy.check_file("edit_file", self.guard.describe(path), write=True)
        if not decision.allowed:
            raise WorkspaceError(f"{self.relative(path)}: not written ({decision.decided_by})")
        existed = await asyncio.to_thread(path.exists)
        await asyncio.to_thread(atomic_write_bytes, path, data)
        self._note_written(path, text, existed)

    def overlays(self) -> dict[str, str]:
        """Open buffers inside the workspace, by relative POSIX path (for the shadow copy)."""
        out: dict[str, str] = {}
        for path, text in self.channel.buffers().items():
            resolved = path.resolve()
            if resolved.is_relative_to(self.root):
                out[resolved.relative_to(self.root).as_posix()] = text
        return out
