"""Long tool outputs: the model gets the head and the tail; the whole text is kept on disk
under .agent-lsp/logs/outputs/ where the model can page through it with read_file."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

from agent_lsp.fileio import atomic_write

OUTPUTS = Path(".agent-lsp/logs/outputs")
GITIGNORE = "# agent-lsp: session logs and outputs are local\nlogs/\n"


class OutputKeeper:
    def __init__(self, root: Path, head: int = 200, tail: int = 100, max_chars: int = 40_000):
        self.root = root
        self.head = head
        self.tail = tail
        self.max_chars = max_chars
        self._session = uuid.uuid4().hex[:8]
        self._counter = itertools.count(1)

    def keep(self, tool: str, text: str) -> str:
        """`text` if short; else head + tail with a note and a reference to the full text."""
        lines = text.splitlines()
        if len(lines) <= self.head + self.tail and len(text) <= self.max_chars:
            return text
        ref = self._save(tool, text)
        if len(lines) <= self.head + self.tail:  # few but very long lines: cut by characters
            half = self.max_chars // 2
            omitted = len(text) - 2 * half
            note = f"[... {omitted} characters omitted; full output: {ref} ...]"
            return f"{text[:half]}\n{note}\n{text[-half:]}"
        omitted = len(lines) - self.head - self.tail
        note = (
            f"[... {omitted} lines omitted; full output: {ref} "
            f"(read_file with start_line={self.head + 1}) ...]"
        )
        kept = "\n".join([*lines[: self.head], note, *lines[-self.tail :]])
        return kept if len(kept) <= self.max_chars * 2 else kept[: self.max_chars * 2]

    def _save(self, tool: str, text: str) -> str:
        rel = OUTPUTS / f"{self._session}-{next(self._counter)}-{tool}.txt"
        path = self.root / rel
        try:
            atomic_write(path, text)
            ignore = self.root / ".agent-lsp" / ".gitignore"
            if not ignore.exists():
                atomic_write(ignore, GITIGNORE)
        except OSError as exc:
            return f"(could not be saved: {exc})"
        return rel.as_posix()
