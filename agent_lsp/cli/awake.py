"""`run`: `asyncio.run` whose event loop wakes up for every signal, whichever thread the
kernel delivered it to.

Python runs a signal's handler (Ctrl-C's, SIGTERM's) on the main thread only, the next time
that thread runs Python code. The kernel may hand a process's signal to any of its threads
(it does when the main thread has one pending already, a child's SIGCHLD on a loaded
machine); the main thread, asleep in the event loop's `select` with nothing due (a prompt
waiting for a line), then never ran the handler: Ctrl-C did nothing. A wake-up fd
(`signal.set_wakeup_fd`) gets a byte for every signal, from any thread, and the loop watches
it, so the handler runs at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run"]

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(_awake(main))


def _drain(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # nothing more to read (EAGAIN), or closed
        while sock.recv(4096):
            pass


async def _awake(main: Coroutine[Any, Any, T]) -> T:
    if os.name != "posix":  # a Windows loop has no add_reader; its signals reach the main thread
        return await main
    if threading.current_thread() is not threading.main_thread():
        return await main  # set_wakeup_fd is the main thread's; there the handlers run anyway
    loop = asyncio.get_running_loop()
    into, out = socket.socketpair()
    into.setblocking(False)
    out.setblocking(False)
    loop.add_reader(into.fileno(), _drain, into)
    before = signal.set_wakeup_fd(out.fileno(), warn_on_full_buffer=False)
    try:
        return await main
    finally:
        signal.set_wakeup_fd(before)
        loop.remove_reader(into.fileno())
        into.close()
        out.close()
