"""LSP base protocol framing (`Content-Length` headers) over asyncio streams."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)
MAX_MESSAGE = 64 * 1024 * 1024


async def read_message(reader: asyncio.StreamReader) -> bytes | None:
    """The next message body, or None at end of stream. Bad headers are skipped, not fatal."""
    while True:
        length: int | None = None
        while True:
            line = await reader.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    length = None
        if length is None or not 0 <= length <= MAX_MESSAGE:
            log.warning("skipping a message without a valid Content-Length")
            continue
        try:
            return await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            return None


def write_message(writer: asyncio.StreamWriter, body: bytes) -> None:
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
