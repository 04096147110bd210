"""Serve LSP over stdin/stdout with the event loop reading stdin itself.

pygls' stdio reader hands every header line and every body to a thread pool: three thread hops
per message, and each hop must win the GIL back from whatever else runs (the agent's tools,
its model calls). While a task runs, those hand-offs added tens of milliseconds to requests.
A pipe that the event loop reads directly has no hops. When stdin is not a pipe or socket (a
regular file, a terminal shared with stdout), pygls' own reader is used.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import TYPE_CHECKING, BinaryIO

from pygls.io_ import StdoutWriter, run_async

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)
LINE_LIMIT = 2**26  # a header line longer than this ends the connection


class PipeReader:
    """pygls' reader interface over an asyncio stream; b"" means end of input."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    async def readline(self) -> bytes:
        try:
            return await self.reader.readline()
        except ValueError:  # a header line without an end: nothing sensible follows
            log.error("a header line longer than %d bytes; closing the connection", LINE_LIMIT)
            return b""

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError:
            return b""


def loop_readable(stdin: BinaryIO, stdout: BinaryIO) -> bool:
    """Whether the event loop can read `stdin` itself: a pipe or socket, and not the same open
    file as `stdout` (making it non-blocking would make the writes non-blocking too)."""
    try:
        into, out = os.fstat(stdin.fileno()), os.fstat(stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    if not (stat.S_ISFIFO(into.st_mode) or stat.S_ISSOCK(into.st_mode)):
        return False
    return (into.st_dev, into.st_ino) != (out.st_dev, out.st_ino)


def serve_stdio(
    server: LanguageServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Run `server` on stdin/stdout until the client says exit or closes the pipe."""
    into: BinaryIO = stdin if stdin is not None else sys.stdin.buffer
    out: BinaryIO = stdout if stdout is not None else sys.stdout.buffer
    if not loop_readable(into, out):
        server.start_io(into, out)
        return
    stop = threading.Event()
    server._stop_event = stop  # pyright: ignore[reportPrivateUsage]  # pygls' shutdown() sets it
    server.protocol.set_writer(StdoutWriter(out))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), into)
        await run_async(
            stop_event=stop,
            reader=PipeReader(reader),
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
