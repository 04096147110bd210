"""The retriever's locations → the editor's snippets. Before an edit step the retriever
(read-only) answers where the step's code is — path, start_line, end_line, summary — and the
orchestrator reads those lines itself (the editor's buffer, else the disk) and hands the editor
the real lines, numbered, never a whole file. A location outside its file, or one the
editor's own read_file would not show without asking (a secret file, a denied path), is dropped
with a note."""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationError

from agent_lsp.errors import AgentLspError
from agent_lsp.messages import TaskStatus
from agent_lsp.project.workspace import Workspace
from agent_lsp.team.plan import json_list
from agent_lsp.team.roles import RETRIEVER
from agent_lsp.team.runner import RoleRunner
from agent_lsp.team.state import Step

MAX_LINES = 150  # lines of one location handed to the editor
MAX_LOCATIONS = 8


class Location(BaseModel):
    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    summary: str = ""


def read_locations(text: str) -> list[Location]:
    try:
        return [Location.model_validate(item) for item in json_list(text, "locations")]
    except ValidationError as exc:
        raise AgentLspError(f"a location is malformed: {exc.errors()[0]['msg']}") from None


def snippets(runner: RoleRunner, locations: list[Location]) -> tuple[list[str], list[str]]:
    """The numbered lines of each location, and a note for each location dropped. The lines
    are read as the editor's own read_file would read them: through the workspace's path
    guard, so a secret file, a denied path or a link out of the project is never shown."""
    workspace = Workspace(runner.host.root, runner.channel, runner.host.gate(runner.channel))
    shown: list[str] = []
    dropped: list[str] = []
    for loc in locations[:MAX_LOCATIONS]:
        where = f"{loc.path}:{loc.start_line}-{loc.end_line}"
        try:
            path = workspace.describe(loc.path, "read_file").path
        except AgentLspError as exc:
            dropped.append(f"dropped {where}: {exc}")
            continue
        if not path.is_file():
            dropped.append(f"dropped {where}: no such file")
            continue
        if workspace.hidden(path, "read_file"):
            dropped.append(f"dropped {where}: not shown without asking (read it with read_file)")
            continue
        try:
            text = workspace.read_text(path)
        except AgentLspError as exc:
            dropped.append(f"dropped {where}: {exc}")
            continue
        except (OSError, ValueError):
            dropped.append(f"dropped {where}: no such file")
            continue
        lines = text.splitlines()
        if loc.start_line > loc.end_line or loc.end_line > len(lines):
            dropped.append(f"dropped {where}: {loc.path} has {len(lines)} lines")
            continue
        end = min(loc.end_line, loc.start_line + MAX_LINES - 1)
        body = "\n".join(f"{n:>4}| {lines[n - 1]}" for n in range(loc.start_line, end + 1))
        head = f"### {loc.path} lines {loc.start_line}-{end}" + (
            f": {loc.summary}" if loc.summary else ""
        )
        shown.append(f"{head}\n{body}")
    return shown, dropped


async def retrieve(runner: RoleRunner, step: Step, parts: int) -> str:
    """The editor's `snippets` section for `step` (or why there is none)."""
    offered = {"locate": f"{step.id}: {step.goal}", "step_files": "\n".join(step.files)}
    outcome, _ = await runner.run(RETRIEVER, offered, f"retriever {step.id}", parts)
    if outcome.status is not TaskStatus.COMPLETED:
        return f"(no code located: the retriever stopped: {outcome.summary[:200]})"
    try:
        locations = read_locations(outcome.summary)
    except AgentLspError as exc:
        return f"(no code located: {exc})"
    shown, dropped = snippets(runner, locations)
    parts_text = shown + [f"({note})" for note in dropped]
    return "\n\n".join(parts_text) or "(no code located)"
