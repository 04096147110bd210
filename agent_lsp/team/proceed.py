"""`continue` with a hint on a team task (`agentLsp.continue`, `agent-lsp run --continue`): a
FAILED team task, or one a crash or a cancel cut short, goes on from its signed checkpoint. Its
failed steps go back to the planner to be planned again (the finished ones stay done and are
not run again), the planner is told where the task stopped and the user's hint (key
`continued`, at every later planner call), and its limits (re-plans, review rounds, the token
and time budget) start again from here. A task that ended DONE, or that the user discarded,
is not continued.

Which task `continue` means without an id: the latest that can go on, a team task's
checkpoint (`.agent-lsp/state/team/`) or a single agent's (`.agent-lsp/checkpoints/`), by when
each was last saved."""

from __future__ import annotations

from agent_lsp.errors import AgentLspError
from agent_lsp.memory.checkpoints import Checkpoint, CheckpointStore, not_continuable
from agent_lsp.team.state import Continued, Phase, StepStatus, TeamState, TeamStore

TEAM_PREFIX = "team-"  # the team's undo record among the single agent's checkpoints


def why_not(state: TeamState) -> str | None:
    """Why the team task of `state` cannot be continued (None: it can)."""
    if state.discarded:
        return f"team task {state.task_id} was discarded: not continuable; start a new task"
    if state.phase is Phase.DONE:
        return f"team task {state.task_id} ended DONE: nothing to continue; start a new task"
    return None


def team_to_continue(
    teams: TeamStore, singles: CheckpointStore, task_id: str | None, warnings: list[str]
) -> TeamState | None:
    """The team task a `continue` of `task_id` goes on with; None when it is a single agent's
    task (its own checkpoints decide, and say why not). `task_id` (a unique start of it, or of
    `team-<id>`), else the latest task that can go on; `AgentLspError` saying why a team task
    named, or the latest task when it is a team task and none can go on, cannot."""
    states = teams.all(warnings)
    if task_id:
        wanted = task_id.removeprefix(TEAM_PREFIX)
        matches = [s for s in states if s.task_id.startswith(wanted)]
        if not matches:
            return None
        others = [c for c in _singles(singles, warnings) if c.task_id.startswith(task_id)]
        if len(matches) + len(others) != 1:
            n = len(matches) + len(others)
            raise AgentLspError(f"{task_id} names {n} tasks; give more of its id")
        state = matches[0]
        if (why := why_not(state)) is not None:
            raise AgentLspError(why)
        return state
    found: list[tuple[str, TeamState | None, str | None]] = [
        (s.updated, s, why_not(s)) for s in states
    ]
    for cp in _singles(singles, warnings):
        why = not_continuable(cp, singles.is_running(cp.task_id))
        found.append((cp.updated, None, why))
    found.sort(key=lambda f: f[0])
    for _, state, why in reversed(found):
        if why is None:
            return state
    if found and (last := found[-1])[1] is not None:
        raise AgentLspError(f"no stopped task to continue ({last[2]})")
    return None


def _singles(store: CheckpointStore, warnings: list[str]) -> list[Checkpoint]:
    return [c for c in store.all(warnings) if not c.task_id.startswith(TEAM_PREFIX)]


def reopen(state: TeamState, hint: str) -> str:
    """`state` set to go on with `hint`: back to PLANNING, its failed steps (and those cut off
    mid-run) to be planned again, the counts its limits start from kept; where it had stopped
    (what the planner is told) is returned."""
    if (why := why_not(state)) is not None:
        raise AgentLspError(why)
    if state.phase is Phase.FAILED:
        where = state.history[-1].split("→")[0] if state.history else Phase.INIT.value
        stopped = f"FAILED in {where}: {state.reason or 'stopped'}"
    else:
        stopped = f"cut short in {state.phase.value} (a crash or a cancel)"
    for step in state.steps:
        if step.status is StepStatus.FAILED:
            step.status, step.stale = StepStatus.PENDING, True
            step.note = f"it failed: {step.summary}" if step.summary else "it failed"
        elif step.status is StepStatus.RUNNING:  # cut off mid-step: it runs again
            step.status = StepStatus.PENDING
    state.continued.append(
        Continued(
            hint=" ".join(hint.split()),
            stopped=stopped,
            review_round=state.review_round,
            replans=state.replans,
            test_replans=state.test_replans,
            tokens={name: usage.total for name, usage in state.usage.items()},
            seconds=state.seconds,
        )
    )
    if state.phase is not Phase.PLANNING:
        state.history.append(f"{state.phase.value}→{Phase.PLANNING.value}")
    state.phase, state.reason = Phase.PLANNING, ""
    state.verified = False
    return stopped


def continued_text(state: TeamState) -> str:
    """What the planner is told of the task's continues: where it stopped, the user's hint."""
    lines: list[str] = []
    for n, done in enumerate(state.continued, 1):
        lines.append(f"{n}. It stopped ({done.stopped}).")
        lines.append(f"   The user's hint: {done.hint or 'go on with the task'}")
    return "\n".join(lines)
