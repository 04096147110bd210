"""The team task's state machine: plan, execute (parallel workers), verify (the full suite),
review (findings become steps, at most `review_rounds` rounds), DONE or FAILED; checkpointed
after every transition, resumable in the phase and step it stopped at."""

from __future__ import annotations

import asyncio
import time

from pydantic import BaseModel, Field

from agent_lsp.config.schema import TeamProgress, TeamSettings
from agent_lsp.errors import AgentLspError
from agent_lsp.loop.verify import NotPermittedError, format_report
from agent_lsp.messages import TaskOutcome, TaskStatus, Usage
from agent_lsp.project.workspace import Workspace
from agent_lsp.seams import EditorChannel
from agent_lsp.task import Task, TaskKind
from agent_lsp.team.backtrack import Backtrack, StepUndo, failed_text, targets
from agent_lsp.team.budget import Budget, per_role
from agent_lsp.team.commander import command, diagnosis_summary
from agent_lsp.team.decisions import (
    append_log,
    decide,
    decisions_text,
    handover,
    previous_handover,
    user_notes,
)
from agent_lsp.team.execute import execute
from agent_lsp.team.host import TeamHost
from agent_lsp.team.memory import load_context
from agent_lsp.team.plan import read_plan
from agent_lsp.team.pointed import with_pointed
from agent_lsp.team.presenter import PLAN, Presenter, milestone, plan_entries
from agent_lsp.team.preview import WriteWatch
from agent_lsp.team.proceed import continued_text, reopen
from agent_lsp.team.review import merged, read_review, review_checks
from agent_lsp.team.roles import PLANNER, REVIEWER
from agent_lsp.team.runner import RoleRunner
from agent_lsp.team.state import (
    FINAL,
    Decision,
    DecisionKind,
    Phase,
    RoleUsage,
    Step,
    StepStatus,
    TeamState,
    TeamStore,
)
from agent_lsp.team.steer import TeamControl
from agent_lsp.team.taskfile import TaskFile, key_event
from agent_lsp.team.templates import template_text

TIME_BUDGET = 3600.0  # seconds for a whole team task
MAX_REPLANS = 2  # re-plannings after stale writes before the task fails
TEST_RETRIES = 2  # re-plannings after a tester's failing tests before the task fails


class TeamOptions(BaseModel):
    workers: int = 2
    review_rounds: int = 2
    tokens: int | None = None  # default: the settings' maxTokens
    seconds: float = TIME_BUDGET
    verbose: bool = False  # progress: every step of every role, not only the milestones

    @classmethod
    def of(cls, team: TeamSettings) -> TeamOptions:
        """The options the `team` settings give."""
        return cls(
            workers=team.workers,
            review_rounds=team.review_rounds,
            tokens=team.budget_tokens,
            seconds=team.budget_seconds,
            verbose=team.progress is TeamProgress.VERBOSE,
        )


class TeamOutcome(BaseModel):
    task_id: str
    phase: Phase
    status: TaskStatus
    summary: str
    verified: bool = False
    steps: list[Step] = Field(default_factory=list[Step])
    usage: dict[str, RoleUsage] = Field(default_factory=dict[str, RoleUsage])
    changed_files: list[str] = Field(default_factory=list[str])
    seconds: float = 0.0
    tool_runs: int = 0

    def as_task_outcome(self) -> TaskOutcome:
        """The outcome as a front end shows a task's (the roles' usage summed)."""
        usage = Usage(
            prompt_tokens=sum(u.prompt_tokens for u in self.usage.values()),
            completion_tokens=sum(u.completion_tokens for u in self.usage.values()),
            calls=sum(u.calls for u in self.usage.values()),
        )
        return TaskOutcome(
            task_id=self.task_id,
            status=self.status,
            summary=self.summary,
            steps=len(self.steps),
            stop_reason=f"team {self.phase.value}",
            usage=usage,
            changed_files=self.changed_files,
            verified=self.verified,
            seconds=self.seconds,
            tool_runs=self.tool_runs,
        )


class Orchestrator:
    def __init__(
        self, host: TeamHost, channel: EditorChannel, options: TeamOptions | None = None
    ) -> None:
        self.host = host
        self.options = options or TeamOptions.of(host.settings.team)
        self.presenter = Presenter(channel, self.options.verbose)
        self.channel: EditorChannel = self.presenter
        self.store = TeamStore(host.root)
        self.undo: StepUndo | None = None

    async def run(self, instruction: str, pointed: Task | None = None) -> TeamOutcome:
        """A new team task; `pointed`: a task naming the user's cursor or selection in a file
        (`Task.path`, `Task.selection`), told to the roles with the instruction."""
        if pointed is not None:
            workspace = Workspace(self.host.root, self.channel, self.host.gate(self.channel))
            instruction = with_pointed(instruction, pointed, workspace)
        state = self.store.new(instruction)
        state.previous = previous_handover(self.store, state.task_id)  # the last task's word
        self.store.save(state)
        return await self._drive(state)

    async def resume(self) -> TeamOutcome:
        """The newest team task a crash cut short, from the phase and step it stopped at."""
        state = self.store.pending()
        if state is None:
            raise AgentLspError("no interrupted team task to resume")
        for step in state.steps:
            if step.status is StepStatus.RUNNING:  # cut off mid-step: it runs again
                step.status = StepStatus.PENDING
        # the whole instruction: what runs now (shown escaped by the channel)
        await self._say(
            f"team: resuming {state.task_id} in {state.phase.value}: “{state.instruction}”"
        )
        return await self._drive(state)

    async def proceed(self, task_id: str, hint: str) -> TeamOutcome:
        """Continue the team task `task_id` (FAILED, or cut short) with the user's `hint`: the
        planner plans its failed steps again, told where it stopped and the hint
        (`team/proceed.py`); the finished steps stay done."""
        state = self.store.load(task_id)  # signed by this user, or refused
        stopped = reopen(state, hint)
        await self._decide(state, "continued", f"continued ({stopped}) with the hint: {hint}")
        await self._say(
            f"team: continuing {state.task_id} ({stopped}) with the hint: "
            f"“{state.since.hint or 'go on with the task'}”: “{state.instruction}”"
        )
        return await self._drive(state)

    async def _say(self, message: str, state: TeamState | None = None) -> None:
        """A milestone; with `state`, the plan as it stands with it (`presenter.PLAN`)."""
        more = {} if state is None or not state.steps else {PLAN: plan_entries(state.steps)}
        await self.channel.report(milestone(message, **more))

    async def _decide(self, state: TeamState, kind: DecisionKind, text: str) -> None:
        """One of the team's decisions kept (`team/decisions.py`), checkpointed."""
        await self._keep(state, [decide(state, kind, text)])

    async def _keep(self, state: TeamState, decisions: list[Decision]) -> None:
        self.store.save(state)
        if (error := append_log(self.store, state, decisions)) is not None:
            self.host.record("warn", "memory", message=error, task_id=state.task_id)
            await self._say(f"WARN {error}")

    async def _move(self, state: TeamState, phase: Phase, reason: str = "") -> None:
        self.store.move(state, phase, reason)
        await self._say(f"team: {phase.value}" + (f" ({reason})" if reason else ""), state)

    async def _drive(self, state: TeamState) -> TeamOutcome:
        started = time.monotonic()
        tokens = self.options.tokens or self.host.settings.max_tokens
        shares = self.host.settings.team.shares
        since = state.since  # a continued task's budget starts again from its continue
        used = {
            name: RoleUsage(prompt_tokens=max(0, usage.total - since.tokens.get(name, 0)))
            for name, usage in state.usage.items()
        }
        spent = state.seconds - since.seconds
        budget = Budget.resumed(tokens, self.options.seconds, used, spent, shares)
        gate = self.host.gate(self.presenter)
        workspace = Workspace(self.host.root, self.presenter, gate)
        self.undo = StepUndo(workspace, state)
        self.channel = WriteWatch(self.presenter, workspace, self.undo, self.options.verbose)
        runner = RoleRunner(
            self.host, self.channel, self.store, state, budget, await self.host.profile()
        )
        fresh = state.phase is Phase.INIT
        taskfile = TaskFile(self.host.memory.layout)  # the plan and progress, as steps finish
        if fresh:
            await asyncio.to_thread(taskfile.begin, state)
        self.store.on_save = taskfile.write
        self.host.record(
            "task_start",
            "agent",
            task_id=state.task_id,
            title=f"team: {state.instruction.splitlines()[0][:60] if state.instruction else ''}",
            mode="started" if fresh else f"resumed in {state.phase.value}",
            step=0,
        )

        title = state.instruction.splitlines()[0][:60] if state.instruction else "team task"
        runner.control = TeamControl(self.presenter, self.host.settings.ask_timeout, title)
        self.host.control = runner.control  # `Session.steer` (agentLsp.steer, AGENT: lines)
        try:
            runner.memory = await load_context(  # once for the task, each role its part
                self.host,
                self.channel,
                gate,
                state.task_id,
                state.instruction,
                "start" if fresh else "resume",
            )
            while state.phase not in FINAL:
                if budget.seconds_left() <= 0:
                    await self._move(state, Phase.FAILED, "the task's time budget is used up")
                    break
                await self._advance(runner, state)
        finally:
            if self.host.control is runner.control:
                self.host.control = None
            state.seconds += time.monotonic() - started
            self.store.save(state)
        if state.phase in FINAL:  # the hand-over for the next task
            kept = user_notes(state)
            end = "done" if state.phase is Phase.DONE else f"failed: {state.reason or 'stopped'}"
            kept.append(decide(state, "ended", f"{end}; {state.verify_summary}".rstrip("; ")))
            state.handover = handover(state)
            await self._keep(state, kept)
        outcome = self._outcome(state)
        self.host.record(
            "task_end",
            "agent",
            task_id=state.task_id,
            status=outcome.status.value,
            steps=len(state.steps),
            summary=outcome.summary,
            changed_files=outcome.changed_files,
        )
        self.store.on_save = None
        await asyncio.to_thread(taskfile.finish, state, outcome.as_task_outcome())
        if taskfile.error is not None:
            self.host.record("warn", "memory", message=taskfile.error, task_id=state.task_id)
            await self._say(f"WARN {taskfile.error}")
        await self._distil(state, runner, outcome)
        return outcome

    async def _distil(self, state: TeamState, runner: RoleRunner, outcome: TeamOutcome) -> None:
        """After a key event, the experience of the task (`memory.distill`), from every role's
        calls and results: one model call, as after a single task."""
        done = outcome.as_task_outcome()
        event = key_event(state, done)
        if event is None or not self.host.settings.memory.distill:
            return
        task = Task(kind=TaskKind.TASK, instruction=state.instruction)
        try:
            model = self.host.routed("distillation", tools=False)
            library = self.host.memory.library
            await library.distil(task, runner.transcript, done, event, "", model, self.presenter)
        except Exception as exc:  # the memory never changes the task's outcome
            self.host.record("warn", "memory", message=f"no experience saved: {exc!r}")
            await self._say(f"WARN no experience saved: {exc!r}")

    async def _advance(self, runner: RoleRunner, state: TeamState) -> None:
        phase = state.phase
        if phase is Phase.INIT:
            await self._move(state, Phase.PLANNING)
        elif phase is Phase.PLANNING:
            await self._plan(runner, state)
        elif phase is Phase.EXECUTING:
            await self._execute(runner, state)
        elif phase is Phase.VERIFYING:
            await self._verify(state)
        elif phase is Phase.REVIEWING:
            await self._review(runner, state)

    async def _plan(self, runner: RoleRunner, state: TeamState) -> None:
        if state.record is None:  # the commander's record first, checkpointed
            record = await command(runner, state.instruction)
            if isinstance(record, str):
                await self._move(state, Phase.FAILED, record)
                return
            state.record = record
            self.store.save(state)
            await self._say(f"team: task record: {record.type.value}, {record.problem} problem")
            if record.diagnose:
                await self._move(state, Phase.DONE, "diagnose only: no step writes")
                return
        stale = [s for s in state.steps if s.stale and s.status is StepStatus.PENDING]
        answer = state.backtrack  # set: a crash cut its undo short; the rest of it first
        if not answer:
            record = state.record.render(state.instruction)
            runner.take_notes()
            await self._keep(state, user_notes(state))
            offered = {
                "record": record,
                "template": template_text(state.record.type),
                "failed_steps": failed_text(state, stale),
                "findings": "\n".join(state.open_findings),
                "steer": "\n".join(f"- {note}" for note in state.notes),
                "continued": continued_text(state),
                "decisions": decisions_text(state),
                "handover": state.previous,
            }
            outcome, _ = await runner.run(PLANNER, offered, "planner")
            if outcome.status is not TaskStatus.COMPLETED:
                await self._move(state, Phase.FAILED, f"the planner stopped: {outcome.summary}")
                return
            answer = outcome.summary
        try:
            steps, undo_ids, why = read_plan(answer, {s.id for s in state.steps})
            going_back = targets(state, undo_ids)
        except AgentLspError as exc:
            await self._move(state, Phase.FAILED, str(exc))
            return
        new_ids = [s.id for s in steps]
        if going_back:
            state.backtrack = answer
            gone = ", ".join(s.id for s in going_back)
            await self._decide(state, "undone", f"undo {gone}: {why or 'the planner traced it'}")
            assert self.undo is not None
            back = Backtrack(self.undo, self.store, self.channel)
            failed = await back.go_back(going_back, why or "the planner traced it", new_ids)
            if failed is not None:
                await self._move(state, Phase.FAILED, failed)
                return
        state.backtrack = ""
        for old in stale:  # planned again: what waited for the old step waits for the new ones
            old.status, old.stale = StepStatus.REPLACED, False
            for step in state.steps:
                if old.id in step.depends_on:
                    step.depends_on = [d for d in step.depends_on if d != old.id] + new_ids
        state.steps.extend(steps)
        state.open_findings = []
        await self._say("team: plan: " + "; ".join(f"{s.id} {s.goal}" for s in steps), state)
        await self._move(state, Phase.EXECUTING)

    async def _execute(self, runner: RoleRunner, state: TeamState) -> None:
        await execute(runner, max(1, self.options.workers))
        stale = [s for s in state.steps if s.stale and s.status is StepStatus.PENDING]
        failed = [s for s in state.steps if s.status is StepStatus.FAILED]
        if failed:
            why = "; ".join(f"{s.id}: {s.summary}" for s in failed)
            await self._move(state, Phase.FAILED, f"step failed: {why}")
        elif failing := [s for s in stale if s.tests_failed]:
            if state.test_replans - state.since.test_replans >= TEST_RETRIES:
                why = f"the tests still fail after {TEST_RETRIES} re-plans: {failing[-1].note}"
                await self._move(state, Phase.FAILED, why)
                return
            state.test_replans += 1
            why = "; ".join(s.note for s in failing)
            await self._decide(state, "re-planned", f"the tester's tests failed: {why}")
            await self._move(state, Phase.PLANNING, why)
        elif stale and state.replans - state.since.replans >= MAX_REPLANS:
            await self._move(state, Phase.FAILED, f"still conflicting after {MAX_REPLANS} re-plans")
        elif stale:
            state.replans += 1
            why = "; ".join(f"{s.id}: {s.note}" for s in stale)
            await self._decide(state, "re-planned", f"stale steps: {why}")
            await self._move(state, Phase.PLANNING, "; ".join(s.note for s in stale))
        elif waiting := [s.id for s in state.steps if s.status is StepStatus.PENDING]:
            await self._move(state, Phase.FAILED, f"steps that cannot run: {', '.join(waiting)}")
        else:
            await self._move(state, Phase.VERIFYING)

    async def _verify(self, state: TeamState) -> None:
        verifier = self.host.verifier
        if verifier is None:
            state.verify_summary, state.verified = "no test runner found: not verified", False
            await self._move(state, Phase.REVIEWING, state.verify_summary)
            return
        await self._say("team: running the full test suite")
        try:
            workspace = Workspace(self.host.root, self.channel, self.host.gate(self.channel))
            report = await verifier.run(workspace)
        except NotPermittedError as exc:
            state.verify_summary, state.verified = f"{exc}: not verified", False
            await self._move(state, Phase.REVIEWING, state.verify_summary)
            return
        summary = report.summary(with_hint=False)
        state.verify_summary, state.verified = f"full suite: {summary}", report.ok
        if report.ok:
            await self._move(state, Phase.REVIEWING, state.verify_summary)
            return
        if state.review_round - state.since.review_round >= self.options.review_rounds:
            await self._move(state, Phase.FAILED, f"the suite fails: {summary}")
            return
        state.review_round += 1
        n = state.review_round
        state.steps.append(
            Step(id=f"v{n}", goal="make the full test suite pass", note=format_report(report))
        )
        await self._move(state, Phase.EXECUTING, f"the suite fails: {summary}")

    async def _review(self, runner: RoleRunner, state: TeamState) -> None:
        checks = await review_checks(
            self.host.root, self.host.git, self.channel, state.changed, self.host.lint
        )
        offered = {
            "task": state.instruction,
            "diff_files": "\n".join(state.changed),
            "suite": state.verify_summary,
            "diff": checks.diff,
            "checks": checks.text(),
        }
        outcome, _ = await runner.run(REVIEWER, offered, "reviewer")
        if outcome.status is not TaskStatus.COMPLETED:
            await self._move(state, Phase.FAILED, f"the reviewer stopped: {outcome.summary}")
            return
        try:
            findings = merged(read_review(outcome.summary), checks)
        except AgentLspError as exc:
            await self._move(state, Phase.FAILED, str(exc))
            return
        if not findings:
            await self._move(state, Phase.DONE)
            return
        texts = [f.text() for f in findings]
        state.findings.extend(texts)
        if state.review_round - state.since.review_round >= self.options.review_rounds:
            limit = self.options.review_rounds
            why = f"review round limit ({limit}) reached; open: {'; '.join(texts)}"
            await self._move(state, Phase.FAILED, why)
            return
        state.review_round += 1
        state.open_findings = texts  # the planner turns them into steps
        await self._decide(state, "rejected", "the reviewer rejected: " + "; ".join(texts))
        n = state.review_round
        await self._move(state, Phase.PLANNING, f"review round {n}: {len(findings)} findings")

    def _outcome(self, state: TeamState) -> TeamOutcome:
        done = [s.id for s in state.steps if s.status is StepStatus.DONE]
        if state.phase is Phase.DONE and state.record is not None and state.record.diagnose:
            status, head = TaskStatus.COMPLETED, diagnosis_summary(state.record)
        elif state.phase is Phase.DONE:
            status = TaskStatus.COMPLETED
            head = f"done: {len(done)} steps ({', '.join(done)})"
        else:
            status = TaskStatus.FAILED
            head = f"failed in {state.history[-1].split('→')[0] if state.history else 'INIT'}: "
            head += state.reason or "stopped"
        parts = [head, state.verify_summary, f"tokens by role: {per_role(state.usage)}"]
        return TeamOutcome(
            task_id=state.task_id,
            phase=state.phase,
            status=status,
            summary="; ".join(p for p in parts if p),
            verified=state.verified,
            steps=state.steps,
            usage=state.usage,
            changed_files=list(state.changed),
            seconds=state.seconds,
            tool_runs=state.tool_runs,
        )
