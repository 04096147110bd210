"""What the user points at — the cursor or the selected text in a file (`Task.selection`) — told
to a team as the single agent is told it (the loop's own words, through the same read guard,
the editor's unsaved text included), folded into the team task's words at its start: every role
that reads the task sees it, and a resumed task has it still (its lines may move as the steps
edit the file; the words keep what the user pointed at)."""

from __future__ import annotations

from agent_lsp.loop.prompt import build_messages
from agent_lsp.project.workspace import Workspace
from agent_lsp.task import Task, TaskKind

_OPEN = "\n\nOpen in the editor: "  # the prompt's last part, which each role gets anyway


def pointed_at(task: Task | None, workspace: Workspace) -> str:
    """The cursor's lines or the selection in `task`, as the single agent's first message says
    it; "" when the task points at nothing."""
    if task is None or not task.path or task.selection is None:
        return ""
    bare = Task(kind=TaskKind.TASK, instruction="", path=task.path, selection=task.selection)
    text = build_messages(bare, workspace, profile="").pop().content or ""
    if _OPEN in text:
        text = text[: text.rindex(_OPEN)]
    return text.strip()


def with_pointed(instruction: str, task: Task | None, workspace: Workspace) -> str:
    told = pointed_at(task, workspace)
    return f"{instruction}\n\n{told}" if told else instruction
