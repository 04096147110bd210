"""EXECUTING: the plan's steps over at most `workers` workers at once. A step starts when
the steps it depends on are done and is done by the role it names (editor, executor, tester);
each writer's writes take the file's lock and a hash check (`channel.RoleChannel`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from agent_lsp.messages import ToolResult
from agent_lsp.team.channel import WriteLocks, current_hash
from agent_lsp.team.planreview import due, review_plan
from agent_lsp.team.preview import WRITING
from agent_lsp.team.retrieve import retrieve
from agent_lsp.team.roles import STEP_ROLES
from agent_lsp.team.runner import RoleRunner
from agent_lsp.team.state import Step, StepStatus, TeamState
from agent_lsp.team.verdict import judge
from agent_lsp.tools.files import STALE


def ready_steps(state: TeamState) -> list[Step]:
    done = {s.id for s in state.steps if s.status is StepStatus.DONE}
    return [
        s
        for s in state.steps
        if s.status is StepStatus.PENDING and all(d in done for d in s.depends_on)
    ]


def worker_context(step: Step) -> dict[str, str]:
    return {
        "step": f"{step.id}: {step.goal}",
        "step_files": "\n".join(step.files),
        "step_done": step.done,
        "note": step.note,
    }


def refused_write(results: Sequence[tuple[str, ToolResult]]) -> str | None:
    """Why a write of the step was refused by the edit tool's own check (the file changed since
    the step read it: another step wrote it meanwhile), if one was: the step is stale, whatever
    its model said after."""
    for name, result in results:
        if result.metadata.get("reason") == STALE:
            return f"a stale write was refused ({name}: {result.error}): another step changed it"
    return None


async def execute(runner: RoleRunner, workers: int) -> list[Step]:
    """Run every step that can run; a step ends done, failed, or marked stale (its status
    back to pending, `note` saying why) for the planner."""
    state = runner.state
    locks = WriteLocks()
    running: dict[asyncio.Task[None], Step] = {}
    stale: list[Step] = []

    async def one(step: Step) -> None:
        root = runner.host.root
        named = [(root / rel).resolve() for rel in step.files]
        inside = [path for path in named if path.is_relative_to(root)]  # the plan's word only
        start = {path: current_hash(runner.channel, path) for path in inside}
        left = sum(s.status in (StepStatus.PENDING, StepStatus.RUNNING) for s in state.steps)
        role = STEP_ROLES[step.role]
        context = worker_context(step)
        if step.role == "edit":  # the retriever first: the editor gets the real lines
            context["snippets"] = await retrieve(runner, step, left)
        WRITING.set((step, role.name))  # this task's writes are the step's (preview, undo)
        outcome, channel = await runner.run(
            role, context, f"{role.name} {step.id}", left, locks, start
        )
        step.summary = outcome.summary
        verdict = judge(step, outcome, channel.results, channel.words)
        refused = channel.stale or refused_write(channel.results)
        if refused is not None:
            step.status, step.note, step.stale = StepStatus.PENDING, refused, True
            stale.append(step)
        elif verdict.tests_failed:  # the tester's root cause goes to the planner
            step.status, step.note, step.summary = (
                StepStatus.PENDING,
                verdict.summary,
                verdict.summary,
            )
            step.stale = step.tests_failed = True
            stale.append(step)
        else:
            step.status, step.summary = verdict.status, verdict.summary
        runner.store.save(state)

    try:
        while True:
            reviewing = due(state)  # a plan review waits for the running steps, then runs
            if reviewing and not running:
                await review_plan(runner)
                reviewing = False
            for step in [] if reviewing else ready_steps(state):
                if len(running) >= workers:
                    break
                if step.stale:
                    continue
                step.status, step.attempts = StepStatus.RUNNING, step.attempts + 1
                runner.store.save(state)
                running[asyncio.create_task(one(step))] = step
            if not running:
                return stale
            finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for job in finished:
                running.pop(job)
                job.result()
    finally:
        for job in running:
            job.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
