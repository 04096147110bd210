"""The retriever's locations → the editor's snippets. Before an edit step the retriever
(read-only) answers where the step's code is — path, start_line, end_line, summary — and the
orchestrator reads those lines itself (the editor's buffer, else the disk) and hands the editor
the real lines, numbered, never a whole file. A location outside its file, or one the
editor's own read_file would not show without asking (a secret file, a denied path), is dropped
with a note. A step whose files are all small skips the retriever: the editor gets those files'
numbered lines whole (one retriever call costs more tokens than such files' lines)."""

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
SMALL_CHARS = 3_000  # a step file this small (and of at most MAX_LINES) is given whole
SMALL_TOTAL = 6_000  # all the step's files, given whole without the retriever
WHOLE = "the whole file"


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
    workspace = _workspace(runner)
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


def small_files(runner: RoleRunner, files: list[str]) -> tuple[list[Location], list[str]] | None:
    """Each of the step's files as one whole-file location, and a note for each empty one,
    when all of them are small (a retriever's call would cost more than their lines); None
    when one is big or none is there yet (the retriever looks for the code). A file not there
    is left out (a new file); one the editor may not read is handed on for `snippets` to drop
    with its note."""
    workspace = _workspace(runner)
    whole: list[Location] = []
    empty: list[str] = []
    total = 0
    for rel in files:
        try:
            res = workspace.describe(rel, "read_file")
            if res.secret or workspace.hidden(res.path, "read_file"):
                whole.append(Location(path=rel, start_line=1, end_line=1))  # dropped, noted
                continue
            if res.path not in runner.channel.buffers() and not res.path.is_file():
                continue  # not there yet: the step creates it
            if res.path.is_file() and res.path.stat().st_size > 4 * SMALL_CHARS:
                return None  # big on disk: not read here
            text = workspace.read_text(res.path)
        except (AgentLspError, OSError, ValueError):
            whole.append(Location(path=rel, start_line=1, end_line=1))  # dropped, noted
            continue
        lines = len(text.splitlines())
        total += len(text)
        if len(text) > SMALL_CHARS or lines > MAX_LINES or total > SMALL_TOTAL:
            return None
        if lines:
            whole.append(Location(path=rel, start_line=1, end_line=lines, summary=WHOLE))
        else:
            empty.append(f"{rel} is empty")
    return (whole, empty) if whole or empty else None


def _workspace(runner: RoleRunner) -> Workspace:
    """The files as the editor's own read_file reads them: its buffers, its path guard."""
    return Workspace(runner.host.root, runner.channel, runner.host.gate(runner.channel))


async def retrieve(runner: RoleRunner, step: Step, parts: int) -> str:
    """The editor's `snippets` section for `step` (or why there is none): the located lines,
    or, when the step's files are small, those files' lines without a retriever call."""
    if (small := small_files(runner, step.files)) is not None:
        shown, dropped = snippets(runner, small[0])
        return "\n\n".join(shown + [f"({note})" for note in dropped + small[1]])
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
