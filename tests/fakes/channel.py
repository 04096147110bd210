"""`RecordingChannel`: an in-memory editor for component tests (fake of the EditorChannel seam)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent_lsp.errors import EditRejectedError
from agent_lsp.messages import AgentEvent


class RecordingChannel:
    """Holds "open buffers", applies edits to them (never to disk), records everything."""

    def __init__(
        self, buffers: Mapping[Path, str] | None = None, reject_edits: bool = False
    ) -> None:
        self.open: dict[Path, str] = {p.resolve(): t for p, t in (buffers or {}).items()}
        self.reject_edits = reject_edits
        self.edits: list[tuple[Path, str, str]] = []
        self.events: list[AgentEvent] = []
        self.answers: list[str | None] = []
        self.questions: list[str] = []  # every question asked, in order
        self.options: list[list[str]] = []  # the options of each question
        self.silent = False  # questions are never answered (the user is away)

    def buffers(self) -> Mapping[Path, str]:
        return dict(self.open)

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        if self.reject_edits:
            raise EditRejectedError("the editor rejected the edit: user said no")
        self.edits.append((path, new_text, label))
        resolved = path.resolve()
        if resolved in self.open:
            self.open[resolved] = new_text
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new_text, encoding="utf-8")

    async def report(self, event: AgentEvent) -> None:
        self.events.append(event)

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        self.questions.append(question)
        self.options.append(list(options))
        if self.silent:
            await asyncio.Event().wait()
        return self.answers.pop(0) if self.answers else None
