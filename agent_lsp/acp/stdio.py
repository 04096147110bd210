"""`serve`: the ACP agent on this process's stdin and stdout, framed by the SDK. The protocol
gets its own copies of the two descriptors; descriptor 1 then points at stderr and 0 at
/dev/null, so that nothing else the process (or a child) prints or reads touches the
protocol."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import cast

import acp
from acp.interfaces import Agent

from agent_lsp.acp.agent import AcpAgent
from agent_lsp.errors import AgentLspError
from agent_lsp.seams import Model

LIMIT = 50 * 1024 * 1024  # the longest message read (the SDK's own default)


def _streamable(fd: int) -> bool:
    """A pipe, a socket or a terminal: what the event loop can watch (a regular file or
    /dev/null it cannot)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


async def _protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    bad = [name for fd, name in ((0, "stdin"), (1, "stdout")) if not _streamable(fd)]
    if bad:
        raise AgentLspError(
            f"acp speaks JSON-RPC on stdin and stdout, and {' and '.join(bad)} "
            f"{'is no pipe' if len(bad) == 1 else 'are no pipes'}: "
            "start it from an ACP client"
        )
    into, out = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LIMIT)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(into, "rb", buffering=0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(out, "wb", buffering=0)
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve(model: Model | None = None, root: Path | None = None) -> int:
    """Serve until the client closes stdin; every session closed at the end."""
    reader, writer = await _protocol_streams()
    agent = AcpAgent(model, root)
    try:
        await acp.run_agent(cast(Agent, agent), writer, reader)
    finally:
        await agent.aclose()
    return 0
