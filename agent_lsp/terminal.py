"""`TerminalChannel`: the EditorChannel of `agent-lsp run` — disk, printed steps, y/n prompts."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from agent_lsp.fileio import atomic_write
from agent_lsp.messages import AgentEvent, EventKind
from agent_lsp.permissions import visible

_MARK = {
    EventKind.STARTED: "▶",
    EventKind.THINKING: "…",
    EventKind.TOOL_CALL: "→",
    EventKind.TOOL_RESULT: "←",
    EventKind.EDIT: "✎",
    EventKind.MESSAGE: "·",
    EventKind.FINISHED: "■",
}


class TerminalChannel:
    def __init__(self, out: TextIO | None = None, assume_yes: bool = False) -> None:
        self.out = out or sys.stdout
        self.assume_yes = assume_yes

    def buffers(self) -> Mapping[Path, str]:
        return {}

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        await asyncio.to_thread(atomic_write, path, new_text)
        self._print(f"  ✎ {label}")

    async def report(self, event: AgentEvent) -> None:
        step = f"[{event.step:>2}] " if event.step else ""
        self._print(f"{step}{_MARK[event.kind]} {event.message}")

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        """The whole question first (escaped: nothing in it can move the cursor or hide text),
        then the options; without a terminal to answer on, the answer is no."""
        self._print(f"? {visible(question)}")
        if self.assume_yes:
            return options[0] if options else None
        if not sys.stdin.isatty():
            self._print("  no terminal to answer on: no")
            return None
        answer = await asyncio.to_thread(input, f"  [{'/'.join(options)}] ")
        return answer if answer in options else None

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)
