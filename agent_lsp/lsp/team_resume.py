"""The editor's resume offer for a team task a crash, a restart or a cancel cut short: when
the server starts, "Resume team task …?" with Resume / Discard (a prompt, or the client
profile's equivalent, as every question of the agent). Resume runs it from the phase and step
it stopped at; Discard marks its checkpoint discarded, never offered again."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types as t

from agent_lsp.lsp.channel import LspEditorChannel
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from agent_lsp.team import TeamStore
from agent_lsp.team.state import TeamState, resume_question

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from agent_lsp.lsp.tasks import TaskManager

RESUME, DISCARD = "Resume", "Discard"


def question(state: TeamState) -> str:
    """The whole instruction (the channel shows it escaped): what Resume would run."""
    return f"agent-lsp: {resume_question(state)}"


async def offer_team_resume(server: LanguageServer, tasks: TaskManager, session: Session) -> bool:
    """Ask about the newest interrupted team task; False when there is none."""
    store = TeamStore(session.root)
    warnings: list[str] = []
    state = await asyncio.to_thread(store.pending, warnings)
    for warning in warnings:  # a checkpoint the project brought: ignored, and said so
        server.window_show_message(
            t.ShowMessageParams(type=t.MessageType.Warning, message=f"agent-lsp: {warning}")
        )
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
