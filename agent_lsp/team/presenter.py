"""What the user sees of a team task: the orchestrator's and the roles' events turned into
progress and log lines, each naming the role and the step (`[worker s2] …`, `team: worker s2
completed …`). No model calls.

`terse` (the default) passes the milestones only: phase changes, the plan, a role run done or
failed, with the tokens per role so far; `verbose` passes every step of every role as well
(its model turns, tool calls and results, edits). Questions always reach the user."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from agent_lsp.messages import AgentEvent, EventKind
from agent_lsp.seams import EditorChannel
from agent_lsp.team.state import Step, StepStatus

MILESTONE = "team_milestone"  # the data key the orchestrator and the runner mark theirs with
PLAN = "team_plan"  # the data key of the plan as it stands: `plan_entries`


def milestone(message: str, **data: object) -> AgentEvent:
    """A milestone event: shown in terse progress too."""
    return AgentEvent(kind=EventKind.MESSAGE, message=message, data={MILESTONE: True, **data})


def plan_entries(steps: Sequence[Step]) -> list[dict[str, str]]:
    """The plan as it stands, for a front end that shows it (an ACP client's plan): each step
    planned and not replaced, its id, goal and status."""
    return [
        {"id": s.id, "goal": s.goal, "status": s.status.value}
        for s in steps
        if s.status is not StepStatus.REPLACED
    ]


class Presenter:
    """Wraps the task's channel; the orchestrator and every role report through it."""

    def __init__(self, inner: EditorChannel, verbose: bool = False) -> None:
        self.inner = inner
        self.verbose = verbose
        self.held = 0  # role events not shown (terse)

    def buffers(self) -> Mapping[Path, str]:
        return self.inner.buffers()

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        await self.inner.apply_edit(path, new_text, label)

    async def report(self, event: AgentEvent) -> None:
        if self.verbose or event.data.get(MILESTONE) or "team_step" not in event.data:
            await self.inner.report(event)
        else:
            self.held += 1

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        return await self.inner.ask(question, options)
