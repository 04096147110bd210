"""The agent's view of the project: open buffers are the truth for open files, disk for the rest."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.errors import WorkspaceError
from agent_lsp.fileio import read_disk_text, text_hash
from agent_lsp.seams import EditorChannel


class Workspace:
    """Resolves paths inside the root, reads through the editor, and writes through it."""

    def __init__(self, root: Path, channel: EditorChannel) -> None:
        self.root = root.resolve()
        self.channel = channel
        self.read_hashes: dict[Path, str] = {}
        self.changed_files: list[str] = []
        self.edit_count = 0

    def resolve(self, relative: str) -> Path:
        """An absolute path inside the workspace; anything that escapes it is refused."""
        if not relative.strip():
            raise WorkspaceError("empty path")
        candidate = Path(relative).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        resolved = candidate.resolve()
        if not resolved.is_relative_to(self.root):
            raise WorkspaceError(f"{relative}: outside the workspace {self.root}")
        return resolved

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def read_text(self, path: Path) -> str:
        """The buffer's text if the file is open in the editor, else the file on disk."""
        buffered = self.channel.buffers().get(path)
        if buffered is not None:
            return buffered
        if not path.is_file():
            raise WorkspaceError(f"{self.relative(path)}: no such file")
        return read_disk_text(path)

    def note_read(self, path: Path, text: str) -> None:
        self.read_hashes[path] = text_hash(text)

    def changed_since_read(self, path: Path, text: str) -> bool:
        seen = self.read_hashes.get(path)
        return seen is not None and seen != text_hash(text)

    def check_writable(self, path: Path) -> None:
        """The agent never writes git internals or the user's policy file."""
        rel = path.relative_to(self.root).parts if path.is_relative_to(self.root) else ()
        if ".git" in rel or rel[:2] == (".agent-lsp", "policy.toml"):
            raise WorkspaceError(f"{self.relative(path)}: the agent may not write this file")

    async def write_text(self, path: Path, new_text: str, label: str) -> None:
        self.check_writable(path)
        await self.channel.apply_edit(path, new_text, label)
        self.note_read(path, new_text)
        self.edit_count += 1
        rel = self.relative(path)
        if rel not in self.changed_files:
            self.changed_files.append(rel)

    def overlays(self) -> dict[str, str]:
        """Open buffers inside the workspace, by relative POSIX path (for the shadow copy)."""
        out: dict[str, str] = {}
        for path, text in self.channel.buffers().items():
            resolved = path.resolve()
            if resolved.is_relative_to(self.root):
                out[resolved.relative_to(self.root).as_posix()] = text
        return out
