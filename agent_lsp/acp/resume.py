"""`session/load` from our own records: an ACP session's id is its session log's id, which every
checkpoint of a task run in it names (`Checkpoint.session`, signed like the checkpoint). Loading
one replays its latest task (the user's words, the model's words and tool calls, the outcome)
and, when that task can go on (stopped short, or cut off by a crash or restart), the next prompt
continues it in the same conversation, the prompt's text its next message."""

from __future__ import annotations

import asyncio
import re

from acp.helpers import start_tool_call, update_agent_message_text, update_user_message_text

from agent_lsp.acp.channel import AcpChannel
from agent_lsp.acp.updates import tool_kind
from agent_lsp.memory.checkpoints import Checkpoint, not_continuable
from agent_lsp.session import Session

SESSION_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{6}")  # memory.logs.new_session_id


def well_formed(session_id: str) -> bool:
    return SESSION_ID.fullmatch(session_id) is not None


async def latest_task(session: Session, session_id: str) -> tuple[Checkpoint | None, list[str]]:
    """The newest task run in the ACP session `session_id`, and what was wrong with the
    checkpoints read (one the repository shipped: not signed by this user, ignored)."""
    warnings: list[str] = []
    found = await asyncio.to_thread(session.memory.checkpoints.all, warnings)
    mine = [cp for cp in found if cp.session == session_id]
    return (mine[-1] if mine else None), warnings


def continuable(session: Session, cp: Checkpoint) -> bool:
    running = session.memory.checkpoints.is_running(cp.task_id)
    return not_continuable(cp, running) is None


async def replay(channel: AcpChannel, cp: Checkpoint, goes_on: bool) -> None:
    """The task as the client saw it: the user's words, the model's words and tool calls (each
    completed: it ran), the outcome, and whether the next prompt continues it."""
    await channel.send(update_user_message_text(cp.task.instruction or cp.task.title()))
    count = 0
    for message in cp.messages:
        if message.role != "assistant":
            continue
        if message.content:
            await channel.send(update_agent_message_text(message.content + "\n"))
        for call in message.tool_calls:
            count += 1
            title = f"{call.name} {call.arguments[:120]}"
            await channel.send(
                start_tool_call(
                    f"replay-{count}", title, kind=tool_kind(call.name), status="completed"
                )
            )
    end = cp.outcome or f"{cp.status} at step {cp.step}"
    more = " — your next prompt continues this task" if goes_on else ""
    await channel.say(f"■ task {cp.task_id}: {end}{more}")
