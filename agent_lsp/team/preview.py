"""Every write of a team step, seen before it lands: its unified diff shown as progress (terse:
one line, `editor s2: calc.py +3 -1` with a minus sign; verbose: the diff too) and kept in the
step's state, and the file's bytes before and after handed to the step's undo record
(`backtrack.StepUndo`).

Which step writes is the `WRITING` context variable, set by the step's run (`execute`); a write
outside a step (the team's own undo) passes through unseen."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path

from agent_lsp.errors import WorkspaceError
from agent_lsp.messages import AgentEvent
from agent_lsp.project.workspace import Workspace
from agent_lsp.seams import EditorChannel
from agent_lsp.team.backtrack import StepUndo
from agent_lsp.team.presenter import milestone
from agent_lsp.team.state import Step

WRITING: ContextVar[tuple[Step, str] | None] = ContextVar("team_writing", default=None)
MINUS = "\u2212"  # the sign of removed lines in the one-line preview
DIFF_KEPT = 4_000  # characters of one write's diff kept in the step's state


def unified(rel: str, old: str, new: str) -> tuple[str, int, int]:
    """The diff of one write and its added and removed line counts."""
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
        )
    )
    added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
    removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
    text = "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in lines)
    return text, added, removed


class WriteWatch:
    """Wraps the team's channel (the presenter); `workspace` reads the text before a write."""

    def __init__(
        self, inner: EditorChannel, workspace: Workspace, undo: StepUndo, verbose: bool = False
    ) -> None:
        self.inner = inner
        self.workspace = workspace
        self.undo = undo
        self.verbose = verbose

    def buffers(self) -> Mapping[Path, str]:
        return self.inner.buffers()

    def _bytes(self, path: Path) -> bytes | None:
        try:
            if path in self.inner.buffers() or path.is_file():
                return self.workspace.read_bytes(path)
        except (OSError, WorkspaceError):
            pass
        return None

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        writing = WRITING.get()
        if writing is None:
            await self.inner.apply_edit(path, new_text, label)
            return
        step, who = writing
        rel = self.workspace.relative(path)
        before = self._bytes(path)
        old = before.decode("utf-8", "replace") if before is not None else ""
        diff, added, removed = unified(rel, old, new_text)
        step.diffs.append(diff[:DIFF_KEPT])
        head = f"{who} {step.id}: {rel} +{added} {MINUS}{removed}"
        shown = f"{head}\n{diff.rstrip()}" if self.verbose else head
        await self.inner.report(milestone(shown, role=who, team_step=f"{who} {step.id}"))
        try:
            await self.inner.apply_edit(path, new_text, label)
        except BaseException:
            step.diffs.remove(diff[:DIFF_KEPT])  # it did not land: not the step's
            raise
        after = self._bytes(path)
        if after is not None:
            await self.undo.record(step, rel, before, after)

    async def report(self, event: AgentEvent) -> None:
        await self.inner.report(event)

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        return await self.inner.ask(question, options)
