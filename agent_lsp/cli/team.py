"""`agent-lsp run --team "…"`, the resume of a team task cut short (`run --resume`) and the
continue of a FAILED or cut-short team task with a hint (`run --continue "…"`)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agent_lsp.cli.commands import EXIT_INTERRUPTED, cannot_reach_model, parse_at
from agent_lsp.cli.jsonl import JsonChannel, JsonLines, interrupted_line, outcome_line
from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.config.settings import load_settings
from agent_lsp.errors import AgentLspError
from agent_lsp.memory.checkpoints import CheckpointStore
from agent_lsp.memory.layout import Layout
from agent_lsp.seams import Model
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from agent_lsp.team import Orchestrator, TeamOutcome, TeamStore
from agent_lsp.team.budget import per_role
from agent_lsp.team.orchestrator import TeamOptions
from agent_lsp.team.proceed import team_to_continue
from agent_lsp.team.state import Phase

EXIT_OK, EXIT_NOT_DONE, EXIT_USAGE, EXIT_UNVERIFIED = 0, 1, 2, 3


def pending_team(root: Path) -> bool:
    """A team task a crash cut short waits in this project (what `run --resume` continues);
    a checkpoint that is not this user's is ignored and said so."""
    warnings: list[str] = []
    found = TeamStore(root).pending(warnings) is not None
    for warning in warnings:
        print(f"agent-lsp: warning: {warning}", file=sys.stderr, flush=True)
    return found


def continued_team(root: Path, task_id: str | None) -> str | None:
    """The id of the team task `run --continue` goes on with (`task_id`, else the latest task
    that stopped short, when it is a team task); None: a single agent's task. `AgentLspError`
    when the team task cannot go on (ended DONE, discarded)."""
    warnings: list[str] = []
    singles = CheckpointStore(Layout(root.resolve()).checkpoints)
    try:
        found = team_to_continue(TeamStore(root.resolve()), singles, task_id, warnings)
    except AgentLspError:
        _warn(warnings)
        raise
    if found is None:
        return None  # the single agent's `run --continue` says its own warnings
    _warn(warnings)
    return found.task_id


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"agent-lsp: warning: {warning}", file=sys.stderr, flush=True)


def team_enabled(root: Path) -> bool:
    """The `team.enabled` setting: `run "…"` runs the team without `--team`."""
    return load_settings(root).settings.team.enabled


async def run_team(
    root: Path,
    instruction: str,
    *,
    resume: bool = False,
    max_steps: int | None = None,
    model: Model | None = None,
    options: TeamOptions | None = None,
    hint: str | None = None,
    continues: str | None = None,
    as_json: bool = False,
    at: str | None = None,
) -> int:
    """A team task; with `resume`, the one a crash cut short; with `hint`, the team task
    `continues` (FAILED or cut short) goes on, the hint to its planner; `at` (`FILE:LINE[-LINE]`,
    as `run --at`): the cursor or selection the roles are told; `as_json`: JSON lines on stdout
    (`cli/jsonl.py`), the outcome with its exit code, the plan and the tokens by role last."""
    lines = JsonLines() if as_json else None

    def fail(message: str, code: int = EXIT_USAGE) -> int:
        print(message, file=sys.stderr, flush=True)
        if lines is not None:
            lines.emit("outcome", status="error", summary=message, exit_code=code)
        return code

    if not root.is_dir():  # noqa: ASYNC240 - one stat before anything starts
        return fail(f"agent-lsp: {root} is not a folder")
    loaded = load_settings(root)
    for warning in loaded.warnings:
        print(f"agent-lsp: warning: {warning}", file=sys.stderr, flush=True)
        if lines is not None:
            lines.emit("warning", message=warning)
    settings = loaded.settings
    if max_steps is not None:
        settings = settings.model_copy(update={"max_steps": max_steps})
    if cannot_reach_model(root, settings, model):
        if lines is not None:
            lines.emit(
                "outcome",
                status="error",
                summary="agent-lsp: the model cannot be reached as configured",
                exit_code=EXIT_USAGE,
            )
        return EXIT_USAGE
    pointed = None
    if at is not None:
        try:
            path, selection = parse_at(root, at)
        except ValueError as exc:
            return fail(f"agent-lsp run: --at {at}: {exc}")
        pointed = Task(kind=TaskKind.TASK, instruction=instruction, path=path, selection=selection)
    session = Session(root, settings, model)
    channel: TerminalChannel | JsonChannel = (
        TerminalChannel() if lines is None else JsonChannel(root, lines)
    )
    if lines is not None:
        session.memory.log.listeners.append(lines.log_record)
    team = Orchestrator(session, channel, options)
    cut, refused = False, None
    outcome = None
    try:
        if hint is not None and continues:
            outcome = await team.proceed(continues, hint)
        else:
            outcome = await (team.resume() if resume else team.run(instruction, pointed))
    except AgentLspError as exc:
        refused = f"agent-lsp: {exc}"
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: the CLI exits 130
        cut = True
        raise
    finally:
        channel.close()
        await session.aclose()
        if cut and lines is not None:
            interrupted_line(lines, EXIT_INTERRUPTED)
    if outcome is None:
        return fail(refused or "agent-lsp: the team task did not start")
    if outcome.phase is not Phase.DONE:
        code = EXIT_NOT_DONE
    else:
        code = EXIT_OK if outcome.verified else EXIT_UNVERIFIED
    if lines is None:
        print_outcome(outcome)
    else:
        outcome_line(
            lines,
            outcome.as_task_outcome(),
            code,
            phase=outcome.phase.value,
            plan=[s.model_dump(mode="json", include=_STEP_FIELDS) for s in outcome.steps],
            tokens_by_role={role: usage.total for role, usage in outcome.usage.items()},
        )
    return code


_STEP_FIELDS = {"id", "goal", "role", "status", "files", "summary"}


def print_outcome(outcome: TeamOutcome) -> None:
    print(f"■ team {outcome.status.value}: {outcome.summary}", flush=True)
    for step in outcome.steps:
        print(f"  {step.id} [{step.status.value}] {step.goal}", flush=True)
    if outcome.changed_files:
        print(f"  changed: {', '.join(outcome.changed_files)}", flush=True)
    print(f"  tokens by role: {per_role(outcome.usage)}; {outcome.seconds:.1f} s", flush=True)
    print(f"  checkpoint: .agent-lsp/state/team/{outcome.task_id}.json", flush=True)
    if outcome.phase is Phase.FAILED:
        print(
            f'  continue: agent-lsp run --continue "your hint" --task {outcome.task_id}',
            flush=True,
        )
