"""The team's memory role, a function of the orchestrator (no model call): it keeps the team's
decisions — why the task was planned again, what the reviewer rejected, what the user said,
what was undone, how the task ended — in the task's signed checkpoint (what the planner reads
back, folded to the newest when they are many) and, for people, as lines appended to
`.agent-lsp/state/team/decisions.md` (never read back into a prompt: a repository may ship
that file). When a team task ends it leaves a hand-over — what it concluded, the decisions,
what is left open — in its checkpoint; the next team task's planner (and the same task when
it is resumed or continued) is given the newest one of this user's signed checkpoints."""

from __future__ import annotations

from collections.abc import Sequence

from agent_lsp.errors import AgentLspError
from agent_lsp.fileio import open_append
from agent_lsp.memory.logs import now_iso
from agent_lsp.team.state import (
    FINAL,
    TEAM_DIR,
    Decision,
    DecisionKind,
    Phase,
    StepStatus,
    TeamState,
    TeamStore,
)

DECISIONS_FILE = TEAM_DIR / "decisions.md"
TEXT_CHARS = 400  # of one decision
KEPT = 60  # decisions kept in a checkpoint (the oldest dropped, counted)
SHOWN_CHARS = 3_000  # of the decisions the planner is shown (the newest that fit)
HANDOVER_CHARS = 2_000


def _line(text: str, limit: int) -> str:
    words = " ".join(text.split())
    return words if len(words) <= limit else words[: limit - 1] + "…"


def decide(state: TeamState, kind: DecisionKind, text: str) -> Decision:
    """`text` kept as a decision of the task (saved with its next checkpoint)."""
    decision = Decision(at=now_iso(), kind=kind, text=_line(text, TEXT_CHARS))
    state.decisions.append(decision)
    if len(state.decisions) > KEPT:
        state.decisions_dropped += len(state.decisions) - KEPT
        del state.decisions[: len(state.decisions) - KEPT]
    return decision


def user_notes(state: TeamState) -> list[Decision]:
    """The user's steer notes not kept as decisions yet, kept now."""
    new = state.notes[state.notes_decided :]
    state.notes_decided = len(state.notes)
    return [decide(state, "user", f"the user said: {note}") for note in new]


def append_log(store: TeamStore, state: TeamState, decisions: Sequence[Decision]) -> str | None:
    """The decisions as lines of `decisions.md`, for people; why not, when they could not be
    written (never raised into the task)."""
    if not decisions:
        return None
    lines = "".join(f"- {d.at} {state.task_id} {d.kind}: {d.text}\n" for d in decisions)
    try:
        with open_append(store.root / DECISIONS_FILE, within=store.root) as out:
            out.write(lines)
    except OSError as exc:  # a link there is refused (UnsafePathError)
        return f"{DECISIONS_FILE.as_posix()}: not written: {exc}"
    return None


def decisions_text(state: TeamState, budget: int = SHOWN_CHARS) -> str:
    """What the planner is shown: the newest decisions that fit in `budget`, oldest first,
    the ones left out counted ("" when there are none)."""
    shown: list[str] = []
    used = 0
    items = state.decisions
    for decision in reversed(items):
        line = f"- {decision.kind}: {decision.text}"
        if used + len(line) > budget:
            break
        shown.append(line)
        used += len(line) + 1
    left = len(items) - len(shown) + state.decisions_dropped
    head = [f"({left} earlier decisions left out)"] if left and shown else []
    return "\n".join([*head, *reversed(shown)])


def handover(state: TeamState) -> str:
    """What a finished team task hands the next one: how it ended, what changed, the
    decisions, what is left open."""
    done = [s for s in state.steps if s.status is StepStatus.DONE]
    open_steps = [s for s in state.steps if s.status in (StepStatus.PENDING, StepStatus.FAILED)]
    end = "done" if state.phase is Phase.DONE else f"failed: {state.reason or 'stopped'}"
    lines = [
        f"Team task {state.task_id}: “{_line(state.instruction, 200)}” — {end}.",
        f"Steps done: {'; '.join(f'{s.id} {_line(s.goal, 80)}' for s in done) or 'none'}.",
    ]
    if open_steps:
        lines.append("Left open: " + "; ".join(f"{s.id} {_line(s.goal, 80)}" for s in open_steps))
    if state.open_findings:
        lines.append("Open review findings: " + "; ".join(state.open_findings[:5]))
    if state.changed:
        lines.append(f"Files changed: {', '.join(state.changed[:20])}.")
    if state.verify_summary:
        lines.append(state.verify_summary)
    if decided := decisions_text(state, HANDOVER_CHARS // 2):
        lines.append(f"Decisions:\n{decided}")
    return _cut("\n".join(lines), HANDOVER_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def previous_handover(store: TeamStore, task_id: str) -> str:
    """The hand-over of this user's newest finished team task other than `task_id` ("" when
    there is none); checkpoints not this user's are never read."""
    try:
        states = store.all()
    except (OSError, AgentLspError):
        return ""
    for state in reversed(states):
        if state.task_id != task_id and state.phase in FINAL and state.handover:
            return state.handover
    return ""
