"""Giving back what a finished agent task no longer needs.

A task's transient objects (the conversation, tool outputs, file listings and texts read,
model responses) are freed when it ends, but the C allocator keeps most of the memory they
used: CPython's object allocator returns only arenas that became entirely empty, and glibc's
malloc keeps freed blocks in each thread's arena (the agent thread, the worker threads of
`asyncio.to_thread`) for reuse. `release_heap` collects the cycles a task left and asks glibc to
return the free pages of every arena to the system (`malloc_trim(0)`), so the server's resident
memory after a task comes back close to what it holds for good (the model client, the symbol
index)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None (another C library: musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_heap() -> None:
    """Collect garbage cycles, then return free heap pages to the system where glibc allows."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return
    try:
        trim(0)
    except OSError as exc:  # never fails a task
        log.debug("malloc_trim failed: %s", exc)
