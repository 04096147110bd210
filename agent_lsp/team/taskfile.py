"""A team task's record where a single task leaves its own: the plan and its progress in
`state/task/current-task.md` (the goal — the user's words and the commander's record —, every
step with its role, status and last words, the steps still to run, what blocks, the outcome),
rewritten whenever the team's checkpoint is (a transition, a step that starts or ends); and the
experience distilled at the end after a key event (`memory.distill`), as the single agent's.

A write that fails is kept (`error`) and said once by the orchestrator, never raised into the
task."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent_lsp.memory.layout import Layout
from agent_lsp.memory.state import (
    TaskState,
    load_meta,
    load_task,
    record_files,
    save_meta,
    start_task,
)
from agent_lsp.memory.task import is_stack_file
from agent_lsp.messages import ChatMessage, TaskOutcome
from agent_lsp.team.roles import STEP_ROLES
from agent_lsp.team.state import FINAL, Phase, StepStatus, TeamState

WORDS = 160  # characters of a step's last words in the file


def _line(text: str, limit: int = WORDS) -> str:
    words = " ".join(text.split())
    return words if len(words) <= limit else words[: limit - 1] + "…"


def said_by(step_summary: str) -> str:
    """A step's last words without the loop's "unverified" head (a role's run is never
    verified alone: the team runs the full suite in VERIFYING)."""
    head, says, words = step_summary.partition("; the model says: ")
    return words if says and head.startswith("unverified: ") else step_summary


def sections(state: TeamState) -> dict[str, str]:
    """The sections of the task file for `state`."""
    goal = [state.instruction.strip(), "", f"A team task ({state.task_id})."]
    if state.record is not None:
        record = state.record
        goal.append(
            f"The task record: {record.type.value}, a {record.problem} problem: {record.goal}"
        )
    progress = [f"phase: {state.phase.value}" + _round(state)]
    for step in state.steps:
        role = STEP_ROLES[step.role].name
        ran = step.summary and step.status is not StepStatus.PENDING
        said = f": {_line(said_by(step.summary))}" if ran else ""
        progress.append(f"- {step.id} [{step.status.value}] {step.goal} ({role}){said}")
    if state.verify_summary:
        progress.append(state.verify_summary)
    done = {s.id for s in state.steps if s.status is StepStatus.DONE}
    waiting = [s for s in state.steps if s.status in (StepStatus.PENDING, StepStatus.RUNNING)]
    next_steps: list[str] = []
    for step in waiting:
        after = [d for d in step.depends_on if d not in done]
        next_steps.append(
            f"- {step.id}: {step.goal}" + (f" (after {', '.join(after)})" if after else "")
        )
    blockers = [f"- {s.id}: {_line(s.note)}" for s in state.steps if s.stale and s.note]
    blockers += [f"- review: {_line(f)}" for f in state.open_findings]
    if state.phase is Phase.FAILED and state.reason:
        blockers.append(f"- {_line(state.reason, 400)}")
    out = {"goal": "\n".join(goal), "progress": "\n".join(progress)}
    if next_steps:
        out["next"] = "\n".join(next_steps)
    if blockers:
        out["blockers"] = "\n".join(blockers)
    return out


def _round(state: TeamState) -> str:
    parts: list[str] = []
    if state.review_round:
        parts.append(f"review round {state.review_round}")
    if state.replans or state.test_replans:
        parts.append(f"re-planned {state.replans + state.test_replans} times")
    return f" ({', '.join(parts)})" if parts else ""


class TaskFile:
    """Keeps `current-task.md` (and its `task.json`) for one team task."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.error: str | None = None  # the first write that failed, for the user
        self.told = False

    def begin(self, state: TeamState) -> None:
        """A new team task: its own task file, the single agent's last one replaced."""
        self._guard(self._begin, state)

    def _begin(self, state: TeamState) -> None:
        self.layout.mount()
        ignored: list[str] = []
        load_meta(self.layout, ignored)
        start_task(self.layout, state.instruction)
        title = state.instruction.splitlines()[0][:60] if state.instruction else ""
        save_meta(
            self.layout,
            {"task_id": f"team-{state.task_id}", "title": f"team: {title}", "status": "running"},
        )
        record_files(self.layout, state.instruction)

    def write(self, state: TeamState) -> None:
        """The plan and its progress as they are now (the checkpoint's hook)."""
        self._guard(self._write, state, None)

    def finish(self, state: TeamState, outcome: TaskOutcome) -> None:
        """The outcome, and the status in `task.json`."""
        self._guard(self._write, state, outcome)

    def _write(self, state: TeamState, outcome: TaskOutcome | None) -> None:
        ignored: list[str] = []
        old = load_task(self.layout, ignored) or TaskState()
        new = TaskState(sections(state), old.extra)
        if outcome is not None:
            files = ", ".join(outcome.changed_files) or "none"
            verified = "" if outcome.verified else ", unverified"
            new.sections["outcome"] = (
                f"{outcome.status.value} ({outcome.stop_reason}{verified}); "
                f"files changed: {files}\n{_line(outcome.summary, 600)}"
            )
        self.layout.reads.write(self.layout.task_file, new.render())
        if outcome is not None:
            meta = load_meta(self.layout, ignored)
            if meta.get("task_id") == f"team-{state.task_id}":
                save_meta(self.layout, {**meta, "status": outcome.status.value})

    def _guard(self, write: Callable[..., None], *args: object) -> None:
        try:
            write(*args)
        except OSError as exc:
            if self.error is None:
                self.error = f"task state not updated: {exc}"


def key_event(state: TeamState, outcome: TaskOutcome) -> str | None:
    """What makes a team task worth an experience, as a single task's (`memory.task.KeyEvents`):
    something failed and was fixed (a failing suite, a tester's failing tests, a stale write, a
    review's findings, then DONE with changes), or a stack file changed."""
    stack = [rel for rel in state.changed if is_stack_file(rel)]
    failed_then_fixed = state.replans or state.test_replans or state.review_round
    if state.phase is Phase.DONE and failed_then_fixed and outcome.changed_files:
        return "fail-fix-pass"
    if stack and state.phase in FINAL:
        return "stack-change: " + ", ".join(dict.fromkeys(stack))
    return None


def role_transcript(
    label: str, messages: Sequence[ChatMessage], outcome: TaskOutcome
) -> list[ChatMessage]:
    """A role's run for the distillation: its calls and results (not its system prompt or
    routed first message), then its outcome and last words in one line."""
    words = said_by(outcome.summary)
    said = ChatMessage(
        role="assistant", content=f"[{label}] {outcome.status.value}: {_line(words, 300)}"
    )
    first = next((n for n, m in enumerate(messages) if m.role == "user"), len(messages))
    calls = [m for m in messages[first + 1 :] if m.role in ("assistant", "tool")]
    if calls and not calls[-1].tool_calls and (calls[-1].content or "").strip() in words:
        calls.pop()  # its last words: in the outcome line
    return [*calls, said]
