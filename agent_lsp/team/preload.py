"""A worker's step files, given in its first message when they are small: the worker need
not spend a model call reading them. They count as read by it (the stale-write check compares
against this text), and they are read as the worker's own read_file would be (secret files
and the policy's denied paths are refused, so left out)."""

from __future__ import annotations

from collections.abc import Sequence

from agent_lsp.errors import AgentLspError
from agent_lsp.project.workspace import Workspace

FILE_LIMIT = 6_000  # characters of one file; a bigger one is left for read_file
TOTAL_LIMIT = 12_000  # characters of all the step's files


def step_texts(workspace: Workspace, files: Sequence[str]) -> str:
    """The files' text as fenced blocks, each noted as read; "" when none fits."""
    parts: list[str] = []
    total = 0
    for rel in files:
        try:
            res = workspace.describe(rel, "read_file")
            if res.secret or workspace.hidden(res.path, "read_file"):
                continue  # never without asking: left for read_file
            path = res.path
            text = workspace.read_text(path)
        except (AgentLspError, OSError, ValueError):
            continue  # not there yet, or not readable
        if len(text) > FILE_LIMIT or total + len(text) > TOTAL_LIMIT:
            continue
        total += len(text)
        workspace.note_read(path, text)
        end = "" if text.endswith("\n") else "\n"
        parts.append(f"{rel}:\n```\n{text}{end}```")
    return "\n".join(parts)
