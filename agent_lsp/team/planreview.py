"""Plan review: after every `REVIEW_EVERY` finished steps the planner — the only role that
changes the plan — is shown the plan's state (done and pending, with summaries) and answers
a revised list for the pending steps, or `[]` to keep them."""

from __future__ import annotations

from agent_lsp.errors import AgentLspError
from agent_lsp.messages import AgentEvent, EventKind, TaskStatus
from agent_lsp.team.plan import json_list, read_steps
from agent_lsp.team.proceed import continued_text
from agent_lsp.team.roles import PLANNER
from agent_lsp.team.runner import RoleRunner
from agent_lsp.team.state import StepStatus, TeamState

REVIEW_EVERY = 5


def pending(state: TeamState) -> list[str]:
    return [s.id for s in state.steps if s.status is StepStatus.PENDING and not s.stale]


def due(state: TeamState) -> bool:
    done = sum(s.status is StepStatus.DONE for s in state.steps)
    return done // REVIEW_EVERY > state.plan_reviews and bool(pending(state))


def plan_state(state: TeamState) -> str:
    lines = [
        f"{s.id} [{s.status.value}] ({s.role}) {s.goal}" + (f" — {s.summary}" if s.summary else "")
        for s in state.steps
        if s.status is not StepStatus.REPLACED
    ]
    lines.append(
        "Answer ONE fenced ```json block: a revised list of steps replacing every pending "
        "step, or [] to keep the pending steps as they are."
    )
    return "\n".join(lines)


async def review_plan(runner: RoleRunner) -> None:
    state = runner.state
    state.plan_reviews = sum(s.status is StepStatus.DONE for s in state.steps) // REVIEW_EVERY
    record = state.record.render(state.instruction) if state.record else state.instruction
    runner.take_notes()
    steer = "\n".join(f"- {note}" for note in state.notes)
    offered = {
        "record": record,
        "plan_state": plan_state(state),
        "steer": steer,
        "continued": continued_text(state),
    }
    outcome, _ = await runner.run(PLANNER, offered, "planner (plan review)")
    verdict = "kept"
    if outcome.status is TaskStatus.COMPLETED:
        try:
            if json_list(outcome.summary, "revised plan"):
                steps = read_steps(outcome.summary, {s.id for s in state.steps})
                replaced = set(pending(state))
                for step in state.steps:
                    if step.id in replaced:
                        step.status = StepStatus.REPLACED
                for step in steps:  # a replaced step is never waited for
                    step.depends_on = [d for d in step.depends_on if d not in replaced]
                state.steps.extend(steps)
                verdict = "revised: " + "; ".join(f"{s.id} {s.goal}" for s in steps)
        except AgentLspError as exc:
            verdict = f"kept ({exc})"
    runner.store.save(state)
    message = f"team: plan review after {state.plan_reviews * REVIEW_EVERY} steps: {verdict}"
    await runner.channel.report(AgentEvent(kind=EventKind.MESSAGE, message=message))
