"""What the user asked for."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel


class TaskKind(StrEnum):
    FIX = "fix"
    TASK = "task"
    EXPLAIN = "explain"  # answer in words, read-only tools, nothing edited
    IMPROVE = "improve"  # propose a change to the agent's own setup, read-only tools


class DiagnosticInfo(BaseModel):
    """An editor diagnostic, LSP-free: 0-based line/character as in LSP."""

    message: str
    line: int
    character: int = 0
    end_line: int | None = None
    source: str | None = None
    code: str | None = None
    severity: str | None = None


class Selection(BaseModel):
    """Where the user is in `Task.path`: the cursor (an empty range) or the selected text, as
    an LSP range (0-based; the end is exclusive)."""

    line: int
    character: int = 0
    end_line: int
    end_character: int = 0

    @property
    def empty(self) -> bool:
        return (self.line, self.character) == (self.end_line, self.end_character)


class Task(BaseModel):
    kind: TaskKind
    instruction: str
    path: str | None = None
    diagnostic: DiagnosticInfo | None = None
    selection: Selection | None = None  # the cursor or the selected text in `path`
    suggestion: bool = False  # prepared in the background (its model: model.routes.suggestions)

    def title(self) -> str:
        if self.kind is TaskKind.FIX and self.diagnostic is not None:
            return f"fix: {self.diagnostic.message.splitlines()[0][:60]}"
        return self.instruction.splitlines()[0][:60] if self.instruction else "task"
