"""The project's memory for a team task, through the seam the single agent's comes by
(`TaskHooks.context`): one init run per team task — the rules files (AGENTS.md, CLAUDE.md…),
the project state (conventions…), the experiences recalled for the task, the init.d steps — its
warnings said once, and each role given only the parts its context keys name (`Role.keys`:
`rules`, `experience`, `conventions`, `init_steps`). The single agent's task state is not
among them: the team keeps its own plan (`team/taskfile.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_lsp.memory.initd import (
    EXPERIENCE_HEADING,
    INITD_HEADING,
    RULES_HEADING,
    STATE_HEADING,
    InitReport,
)
from agent_lsp.messages import AgentEvent, EventKind
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.seams import EditorChannel
from agent_lsp.team.host import TeamHost

RULES, EXPERIENCE, CONVENTIONS, INIT_STEPS = "rules", "experience", "conventions", "init_steps"
MEMORY_KEYS = (RULES, EXPERIENCE, CONVENTIONS, INIT_STEPS)
HEAD = "## The project's memory (the source of truth over anything older in the conversation)"


def key_of(heading: str) -> str | None:
    """The context key of a section of the init run's context (None: not a role's)."""
    if heading.startswith(RULES_HEADING):
        return RULES
    if heading.startswith(STATE_HEADING):
        return CONVENTIONS
    if heading == EXPERIENCE_HEADING:
        return EXPERIENCE
    if heading.startswith(INITD_HEADING):
        return INIT_STEPS
    return None  # the single agent's task state: the team keeps its own


@dataclass(frozen=True)
class ProjectContext:
    """The parts of the project's memory, each under its context key."""

    sections: tuple[tuple[str, str, str], ...] = ()  # (key, heading, text), in the run's order

    def for_role(self, keys: Sequence[str]) -> str:
        """The parts `keys` name, as one block ("" when none)."""
        mine = [(heading, text) for key, heading, text in self.sections if key in keys]
        if not mine:
            return ""
        return "\n".join([HEAD, *(f"### {heading}\n{text.strip()}" for heading, text in mine)])


async def load_context(
    host: TeamHost,
    channel: EditorChannel,
    gate: CommandPolicy,
    task_id: str,
    instruction: str,
    reason: str,
) -> ProjectContext:
    """One init run for the whole team task (`reason`: "start" or "resume"); its warnings and
    conflicts said once, here, never again by a role."""
    try:
        report, recalled = await host.memory.starting_context(
            instruction, channel, gate, host.settings.memory, reason
        )
    except Exception as exc:  # the memory never stops the task
        report, recalled = InitReport("", [f"the project's memory not loaded ({exc!r})"]), []
    said = [*(f"conflict: {c}" for c in report.conflicts), *report.warnings]
    for text in dict.fromkeys(said):
        host.record("warn", "memory", message=text, task_id=task_id)
        await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=f"WARN {text}"))
    if recalled:
        message = f"memory: recalled {', '.join(recalled)}"
        await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=message))
    sections = tuple(
        (key, heading, text)
        for heading, text in report.sections
        if (key := key_of(heading)) is not None and text.strip()
    )
    host.record(
        "init",
        "init",
        task_id=task_id,
        message=f"team: starting context built ({reason}): "
        + (", ".join(dict.fromkeys(key for key, _, _ in sections)) or "nothing")
        + f"; {len(report.conflicts)} conflicts, {len(report.warnings)} warnings",
        reason=reason,
        conflicts=report.conflicts,
    )
    return ProjectContext(sections)
