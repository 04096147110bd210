"""The README's head: what the project says it is, for the first request (the single agent's
system prompt, the team commander's record)."""

from __future__ import annotations

from agent_lsp.errors import AgentLspError
from agent_lsp.project.workspace import Workspace

__all__ = ["README_NAMES", "readme_head"]

README_NAMES = ("README.md", "README.rst", "README.txt", "README")


def readme_head(workspace: Workspace, limit: int) -> str:
    """The first `limit` characters of the README, read as the agent's read_file would read it:
    a README that is a link out of the project, a secret or a denied file is not given."""
    for name in README_NAMES:
        try:
            path = workspace.describe(name, "read_file").path
            if not path.is_file() or workspace.hidden(path, "read_file"):
                continue
            text = workspace.read_text(path)
        except (AgentLspError, OSError, ValueError):
            continue
        cut = " […]" if len(text) > limit else ""
        return text[:limit] + cut
    return ""
