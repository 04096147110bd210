"""Backtracking: the team's writes, step by step, as an undo record (the single agent's
checkpoint format and `memory.undo`, so each undo puts back the bytes the file held before the
step, through the editor when it is open there), and going back over the last finished steps,
newest first, at most `MAX_UNDONE` steps a task before the user is asked.

The record is `.agent-lsp/checkpoints/team-<task>/` (finished: never offered for resume;
`agent-lsp undo --task team-<task>` reverts a team task's steps too)."""

from __future__ import annotations

import asyncio

from agent_lsp.errors import AgentLspError
from agent_lsp.memory.checkpoints import (
    Checkpoint,
    CheckpointStore,
    FileChange,
    StepRecord,
    undoable,
)
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.undo import undo_steps
from agent_lsp.project.workspace import Workspace
from agent_lsp.seams import EditorChannel
from agent_lsp.task import Task, TaskKind
from agent_lsp.team.presenter import milestone
from agent_lsp.team.state import Step, StepStatus, TeamState, TeamStore

MAX_UNDONE = 3  # steps undone in a task before the user is asked
UNDO_FURTHER = "Undo further and re-plan"
KEEP_AND_STOP = "Keep and stop"


class StepUndo:
    def __init__(self, workspace: Workspace, state: TeamState) -> None:
        self.workspace = workspace
        self.state = state
        self.store = CheckpointStore(Layout(workspace.root).checkpoints)
        self.task_id = f"team-{state.task_id}"
        self._lock = asyncio.Lock()

    def checkpoint(self) -> Checkpoint:
        found = self.store.load(self.task_id, [])
        if found is not None:
            return found
        task = Task(kind=TaskKind.TASK, instruction=self.state.instruction)
        return Checkpoint(task_id=self.task_id, task=task, status="finished")

    def number(self, step: Step) -> int:
        """The step's record number: its place in the plan, from 1."""
        return next(i for i, s in enumerate(self.state.steps, 1) if s is step or s.id == step.id)

    async def record(self, step: Step, rel: str, before: bytes | None, after: bytes) -> None:
        """`rel` went from `before` (None: no file) to `after` in `step`."""
        async with self._lock:
            await asyncio.to_thread(self._record, self.number(step), rel, before, after)

    def _record(self, number: int, rel: str, before: bytes | None, after: bytes) -> None:
        cp = self.checkpoint()
        record = next((r for r in cp.steps if r.step == number and not r.undone), None)
        if record is None:
            record = StepRecord(step=number)
            cp.steps.append(record)
        change = next((c for c in record.files if c.path == rel), None)
        if change is None:
            blob = self.store.put(before) if before is not None else None
            change = FileChange(path=rel, before=blob)
            record.files.append(change)
        change.after = self.store.put(after)
        cp.changed_files = sorted({*cp.changed_files, rel})
        self.store.save(cp)

    def to_undo(self, target: Step) -> list[Step]:
        """The finished steps to undo, newest first, to take back `target`'s edits (empty:
        it wrote nothing left to undo)."""
        cp = self.checkpoint()
        number = self.number(target)
        live = undoable(cp, None)
        if not any(r.step == number for r in live):
            return []
        out: list[Step] = []
        for record in live:
            out.append(self.state.steps[record.step - 1])
            if record.step == number:
                break
        return out

    async def undo_newest(self, step: Step) -> None:
        """Undo the newest step's edits (`step`'s: a crash may have undone them already)."""
        cp = self.checkpoint()
        live = undoable(cp, 1)
        if live and live[0].step == self.number(step):
            await undo_steps(cp, self.store, self.workspace, 1, force=False)


GO_BACK = (
    'If a finished step above is the cause, answer instead with ONE object {"undo": ["s1"], '
    '"why": "...", "steps": [...]}: the edits of that step and of the steps finished after it '
    "are undone first (newest first), then your steps run."
)


def failed_text(state: TeamState, stale: list[Step]) -> str:
    """The steps to plan again and, when there are, the finished ones that may be undone."""
    if not stale:
        return ""
    lines = [f"{s.id}: {s.goal} — {s.note}" for s in stale]
    done = [s for s in state.steps if s.status is StepStatus.DONE and s.diffs]
    if done:
        lines.append(
            "Finished steps that changed files: " + "; ".join(f"{s.id} {s.goal}" for s in done)
        )
        lines.append(GO_BACK)
    return "\n".join(lines)


class Backtrack:
    """Going back: the named finished steps and those finished after them undone, newest
    first, one at a time; past the task's limit the user is asked."""

    def __init__(self, undo: StepUndo, store: TeamStore, channel: EditorChannel) -> None:
        self.undo = undo
        self.store = store
        self.channel = channel
        self.state = undo.state

    async def go_back(self, going_back: list[Step], why: str, new_ids: list[str]) -> str | None:
        """None when done; else why the task stops (the edits not undone are kept)."""
        state = self.state
        chain = max((self.undo.to_undo(t) for t in going_back), key=len)
        for n, step in enumerate(chain):
            if state.undone_steps >= state.undo_allowed:
                refused = await self._ask_further(chain[n:])
                if refused is not None:
                    return refused
            try:
                await self.undo.undo_newest(step)
            except AgentLspError as exc:
                return f"could not undo {step.id}: {exc}"
            mark_undone(state, step, why, new_ids)
            state.undone_steps += 1
            self.store.save(state)
            await self.channel.report(milestone(f"team: undid {step.id} ({why})"))
        for step in going_back:  # named, but nothing of theirs was left to undo
            if step not in chain:
                mark_undone(state, step, why, new_ids)
        self.store.save(state)
        return None

    async def _ask_further(self, left: list[Step]) -> str | None:
        state = self.state
        ids = ", ".join(s.id for s in left)
        question = (
            f"team: going back needs undoing {ids} too; {state.undone_steps} steps are undone "
            f"already (the limit is {MAX_UNDONE}). Undo further and re-plan, or keep the edits "
            "and stop?"
        )
        answer = await self.channel.ask(question, [UNDO_FURTHER, KEEP_AND_STOP])
        if answer == UNDO_FURTHER:
            state.undo_allowed = state.undone_steps + len(left)
            self.store.save(state)
            return None
        said = "the user chose to keep them" if answer == KEEP_AND_STOP else "no answer"
        why = f"going back past {MAX_UNDONE} undone steps ({ids}) needs the user: {said}"
        return f"{why}; the edits are kept"


def mark_undone(state: TeamState, step: Step, why: str, new_ids: list[str]) -> None:
    """`step` was undone: REPLACED, with the reason; what waited for it waits for `new_ids`."""
    step.status, step.undone, step.stale = StepStatus.REPLACED, True, False
    step.note = f"undone: {why}"
    for other in state.steps:
        if step.id in other.depends_on:
            other.depends_on = [d for d in other.depends_on if d != step.id] + new_ids


def targets(state: TeamState, ids: list[str]) -> list[Step]:
    """The finished steps the planner named to go back to (unknown ids: a clear error)."""
    known = {s.id: s for s in state.steps}
    missing = [i for i in ids if i not in known]
    if missing:
        raise AgentLspError(f"the planner asked to undo unknown steps: {', '.join(missing)}")
    return [known[i] for i in ids if known[i].status is StepStatus.DONE]
