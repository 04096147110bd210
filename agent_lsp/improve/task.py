"""The task an improvement starts from, and the patch as the user reviews it (a diff)."""

from __future__ import annotations

import difflib

from agent_lsp.improve.files import FileChange
from agent_lsp.task import Task, TaskKind

__all__ = ["improve_task", "unified_diff"]

INSTRUCTION = """\
Improve agent-lsp's own setup for this project, as the user asks: {request}
Read what you need (the project, .agent-lsp/config.toml, docs), then call propose_improvement \
once with the smallest patch that does it: settings of .agent-lsp/config.toml (dotted \
camelCase keys; `tests.args` for arguments every test run gets), a prompt note (ends the \
system prompt of every task here), tool notes (end one tool's description) or project tools \
(a command with typed arguments that becomes a tool). You edit no file yourself; the user \
reviews the patch."""


def improve_task(request: str) -> Task:
    """A task of kind improve (read-only tools and propose_improvement)."""
    return Task(kind=TaskKind.IMPROVE, instruction=INSTRUCTION.format(request=request.strip()))


def unified_diff(changes: list[FileChange]) -> str:
    """Each changed file as a unified diff (a new file from /dev/null)."""
    out: list[str] = []
    for change in changes:
        old = (change.before or "").splitlines(keepends=True)
        new = (change.after or "").splitlines(keepends=True)
        before = f"a/{change.path}" if change.before is not None else "/dev/null"
        out += difflib.unified_diff(old, new, before, f"b/{change.path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)
