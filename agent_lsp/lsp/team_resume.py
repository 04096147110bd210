"""The editor's resume offer for a team task a crash, a restart or a cancel cut short: when
the server starts, "Resume team task …?" with Resume / Discard (a prompt, or the client
profile's equivalent, as every question of the agent). Resume runs it from the phase and step
it stopped at; Discard marks its checkpoint discarded, never offered again."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from agent_lsp.lsp.channel import LspEditorChannel
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from agent_lsp.team import TeamStore
from agent_lsp.team.state import StepStatus, TeamState

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from agent_lsp.lsp.tasks import TaskManager

RESUME, DISCARD = "Resume", "Discard"


def question(state: TeamState) -> str:
    title = state.instruction if len(state.instruction) <= 80 else state.instruction[:77] + "..."
    done = sum(s.status is StepStatus.DONE for s in state.steps)
    return (
        f"agent-lsp: Resume team task “{title}”? It stopped in {state.phase.value} "
        f"({done} of {len(state.steps)} steps done)."
    )


async def offer_team_resume(server: LanguageServer, tasks: TaskManager, session: Session) -> bool:
    """Ask about the newest interrupted team task; False when there is none."""
    store = TeamStore(session.root)
    state = await asyncio.to_thread(store.pending)
    if state is None:
        return False
    channel = LspEditorChannel(server, session.settings.edit_timeout, lambda _: None)
    answer = await channel.ask(question(state), [RESUME, DISCARD])
    if answer == RESUME:
        tasks.start(
            Task(kind=TaskKind.TASK, instruction=state.instruction), session, resume=True, team=True
        )
    elif answer == DISCARD:
        store.discard(state)
    return True
