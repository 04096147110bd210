"""The team task's state machine and its checkpoint file.

INIT → PLANNING → EXECUTING → VERIFYING → REVIEWING → DONE / FAILED (PLANNING → DONE for a
diagnosis: the commander's record asked for no change). Every transition (and
every step that starts or ends) is written to `.agent-lsp/state/team/<task>.json` with an
atomic write, so a killed server or CLI resumes in the phase and step it stopped at.

The file is signed with this user's key (`agent_lsp.signing`): a team checkpoint a repository
ships is never offered, resumed or undone — it is ignored, and said so.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from agent_lsp.errors import AgentLspError
from agent_lsp.fileio import atomic_write_bytes, ensure_dir
from agent_lsp.memory.logs import now_iso
from agent_lsp.signing import Unsigned, seal, unseal
from agent_lsp.team.record import TaskRecord

TEAM_DIR = Path(".agent-lsp") / "state" / "team"
KIND = "team"  # the kind its checkpoints are signed as


class Phase(StrEnum):
    INIT = "INIT"
    PLANNING = "PLANNING"
    EXECUTING = "EXECUTING"
    VERIFYING = "VERIFYING"
    REVIEWING = "REVIEWING"
    DONE = "DONE"
    FAILED = "FAILED"


FINAL = (Phase.DONE, Phase.FAILED)

# Which phase may follow which (FAILED may follow any phase that is not final).
NEXT: dict[Phase, tuple[Phase, ...]] = {
    Phase.INIT: (Phase.PLANNING,),
    Phase.PLANNING: (Phase.EXECUTING, Phase.DONE),  # DONE: a diagnosis, nothing to do
    Phase.EXECUTING: (Phase.VERIFYING, Phase.PLANNING),
    Phase.VERIFYING: (Phase.REVIEWING, Phase.EXECUTING),
    Phase.REVIEWING: (Phase.DONE, Phase.PLANNING, Phase.EXECUTING),
    Phase.DONE: (),
    Phase.FAILED: (),
}


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    REPLACED = "replaced"  # a stale write, or undone: planned again as other steps


class Step(BaseModel):
    """One atomic step of the plan: what to do, where, when it is done, after which steps."""

    id: str
    goal: str
    files: list[str] = Field(default_factory=list[str])
    done: str = ""  # the step's definition of done
    depends_on: list[str] = Field(default_factory=list[str])
    role: Literal["edit", "run", "test"] = "edit"  # who does it: editor, executor, tester
    status: StepStatus = StepStatus.PENDING
    attempts: int = 0
    summary: str = ""  # the worker's last words, or why the step failed
    note: str = ""  # why it runs again (a stale write, a failing suite)
    stale: bool = False  # a write was refused as stale: the planner plans it again
    tests_failed: bool = False  # a tester's tests failed: planned again from its root cause
    undone: bool = False  # its edits were undone (backtracking): `note` says why
    diffs: list[str] = Field(default_factory=list[str])  # each write's diff, before it landed


class RoleUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Continued(BaseModel):
    """A `continue` of the task with the user's hint (`team/proceed.py`): where it had stopped,
    and the counts then, from which the task's limits (re-plans, review rounds, tokens by role,
    seconds) start again."""

    hint: str
    stopped: str  # e.g. "FAILED in EXECUTING: step failed: s2: …"
    review_round: int = 0
    replans: int = 0
    test_replans: int = 0
    tokens: dict[str, int] = Field(default_factory=dict[str, int])  # used by role then
    seconds: float = 0.0


DecisionKind = Literal["re-planned", "rejected", "user", "continued", "undone", "ended"]


class Decision(BaseModel):
    """One of the team's decisions (`team/decisions.py`)."""

    at: str
    kind: DecisionKind
    text: str


class TeamState(BaseModel):
    task_id: str
    instruction: str
    phase: Phase = Phase.INIT
    record: TaskRecord | None = None  # the commander's, once PLANNING began
    steps: list[Step] = Field(default_factory=list[Step])
    review_round: int = 0
    findings: list[str] = Field(default_factory=list[str])  # every review finding so far
    open_findings: list[str] = Field(default_factory=list[str])  # for the planner to plan
    verify_summary: str = ""
    verified: bool = False  # the full suite passed on the final text
    changed: list[str] = Field(default_factory=list[str])  # files the workers changed
    tool_runs: int = 0  # tool calls the roles made
    replans: int = 0  # times steps were planned again after a stale write
    plan_reviews: int = 0  # plan reviews so far (one after every 5 finished steps)
    test_replans: int = 0  # times steps were planned again after a tester's failing tests
    undone_steps: int = 0  # finished steps whose edits were undone (backtracking)
    undo_allowed: int = 3  # undone steps allowed before the user is asked (the user: more)
    backtrack: str = ""  # the planner's answer going back, until its undo is done (resume)
    usage: dict[str, RoleUsage] = Field(default_factory=dict[str, RoleUsage])
    history: list[str] = Field(default_factory=list[str])  # "PLANNING→EXECUTING", in order
    reason: str = ""  # why the task failed
    seconds: float = 0.0  # wall time spent in earlier runs (a resumed task)
    discarded: bool = False  # the user declined to resume it
    notes: list[str] = Field(default_factory=list[str])  # the user's steer notes, for the planner
    continued: list[Continued] = Field(default_factory=list[Continued])  # `continue`s, in order
    updated: str = ""  # when it was last saved (which task is the latest: `continue`)
    decisions: list[Decision] = Field(default_factory=list[Decision])  # the newest, in order
    decisions_dropped: int = 0  # older decisions no longer kept
    notes_decided: int = 0  # the steer notes already kept as decisions
    previous: str = ""  # the hand-over of the team task before this one, when it began
    handover: str = ""  # what this task hands the next one, once it ended

    @property
    def since(self) -> Continued:
        """The latest continue (the limits count from it), or the task's start."""
        return self.continued[-1] if self.continued else Continued(hint="", stopped="")

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)


def resume_question(state: TeamState) -> str:
    """The question that decides whether `state` runs again: its whole instruction (what would
    run), never a cut one."""
    done = sum(s.status is StepStatus.DONE for s in state.steps)
    return (
        f"Resume team task “{state.instruction}”? It stopped in {state.phase.value} "
        f"({done} of {len(state.steps)} steps done)."
    )


class TeamStore:
    """The checkpoint files of a project's team tasks."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / TEAM_DIR
        self.on_save: Callable[[TeamState], None] | None = None  # after each save (task file)

    def new(self, instruction: str) -> TeamState:
        task_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        state = TeamState(task_id=task_id, instruction=instruction)
        self.save(state)
        return state

    def path(self, task_id: str) -> Path:
        return self.folder / f"{task_id}.json"

    def save(self, state: TeamState) -> None:
        ensure_dir(self.folder, within=self.root)
        state.updated = now_iso()
        body = state.model_dump_json(indent=1).encode("utf-8")
        atomic_write_bytes(self.path(state.task_id), seal(KIND, body), within=self.root)
        if self.on_save is not None:
            self.on_save(state)

    def load(self, task_id: str) -> TeamState:
        """The checkpoint of `task_id`; `AgentLspError` when missing, unreadable or not this
        user's (unsigned: a file the project brought)."""
        path = self.path(task_id)
        try:
            if path.is_symlink():
                raise OSError("a link")
            body = unseal(KIND, path.read_bytes())
            state = TeamState.model_validate(json.loads(body.decode("utf-8")))
        except FileNotFoundError:
            raise AgentLspError(f"no team task {task_id}") from None
        except Unsigned as exc:
            raise AgentLspError(f"{TEAM_DIR.as_posix()}/{path.name}: ignored: {exc}") from None
        except (OSError, ValueError, ValidationError) as exc:
            raise AgentLspError(f"the team checkpoint {path.name} is unreadable: {exc}") from None
        if state.task_id != task_id:
            raise AgentLspError(f"the team checkpoint {path.name} names task {state.task_id}")
        return state

    def all(self, warnings: list[str] | None = None) -> list[TeamState]:
        """Every team task whose checkpoint is this user's, oldest first (by its last save);
        the others are said in `warnings`."""
        if not self.folder.is_dir():
            return []
        found: list[TeamState] = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                state = self.load(path.stem)
            except AgentLspError as exc:
                if warnings is not None:
                    warnings.append(str(exc))
                continue
            if not state.updated:  # saved before the field: the file's time
                stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC)
                state.updated = stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            found.append(state)
        return sorted(found, key=lambda s: (s.updated, s.task_id))

    def pending(self, warnings: list[str] | None = None) -> TeamState | None:
        """The newest team task that did not reach DONE or FAILED (a crash cut it short);
        checkpoints that cannot be used (not this user's, unreadable) are said in `warnings`."""
        if not self.folder.is_dir():
            return None
        for path in sorted(self.folder.glob("*.json"), reverse=True):
            try:
                state = self.load(path.stem)
            except AgentLspError as exc:
                if warnings is not None:
                    warnings.append(str(exc))
                continue
            if state.phase not in FINAL:
                return state
        return None

    def discard(self, state: TeamState) -> None:
        """The user declined to resume it: FAILED, marked discarded, never offered again."""
        state.discarded = True
        self.move(state, Phase.FAILED, "discarded by the user")

    def move(self, state: TeamState, phase: Phase, reason: str = "") -> None:
        """A transition, checked against the machine, then checkpointed."""
        if state.phase in FINAL:
            raise AgentLspError(f"team task: already {state.phase}")
        if phase is not Phase.FAILED and phase not in NEXT[state.phase]:
            raise AgentLspError(f"team task: no transition {state.phase} → {phase}")
        state.history.append(f"{state.phase.value}→{phase.value}")
        state.phase = phase
        if reason:
            state.reason = reason
        self.save(state)
