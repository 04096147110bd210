"""`agent-lsp run --team "…"`, the resume of a team task cut short (`run --resume`) and the
continue of a FAILED or cut-short team task with a hint (`run --continue "…"`)."""

from __future__ import annotations

import sys
from pathlib import Path

from agent_lsp.cli.commands import cannot_reach_model
from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.config.settings import load_settings
from agent_lsp.errors import AgentLspError
from agent_lsp.memory.checkpoints import CheckpointStore
from agent_lsp.memory.layout import Layout
from agent_lsp.seams import Model
from agent_lsp.session import Session
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
) -> int:
    """A team task; with `resume`, the one a crash cut short; with `hint`, the team task
    `continues` (FAILED or cut short) goes on, the hint to its planner."""
    loaded = load_settings(root)
    for warning in loaded.warnings:
        print(f"agent-lsp: warning: {warning}", file=sys.stderr, flush=True)
    settings = loaded.settings
    if max_steps is not None:
        settings = settings.model_copy(update={"max_steps": max_steps})
    if cannot_reach_model(root, settings, model):
        return EXIT_USAGE
    session = Session(root, settings, model)
    channel = TerminalChannel()
    team = Orchestrator(session, channel, options)
    try:
        if hint is not None and continues:
            outcome = await team.proceed(continues, hint)
        else:
            outcome = await (team.resume() if resume else team.run(instruction))
    except AgentLspError as exc:
        print(f"agent-lsp: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    finally:
        channel.close()
        await session.aclose()
    print_outcome(outcome)
    if outcome.phase is not Phase.DONE:
        return EXIT_NOT_DONE
    return EXIT_OK if outcome.verified else EXIT_UNVERIFIED


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
