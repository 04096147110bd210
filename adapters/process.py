"""Run one subprocess without blocking: capped merged output, a timeout, and a platform's kill
of its whole tree (shared by :mod:`adapters.shell` and :mod:`adapters.winshell`)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from adapters.results import CommandResult

__all__ = ["execute"]

_CHUNK = 64 * 1024
_TERM_GRACE = 2.0  # seconds between the polite stop and the kill
_DRAIN_GRACE = 0.5  # seconds to wait for EOF once the main process has exited


class _CappedBuffer:
    """Keeps the first and last bytes of a stream, counting what was dropped in between."""

    def __init__(self, limit: int) -> None:
        self._head_cap = limit // 2
        self._tail_cap = limit - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self._tail_cap == 0:
            return
        if len(chunk) >= self._tail_cap:
            self._tail[:] = chunk[-self._tail_cap :]
        else:
            self._tail += chunk
            excess = len(self._tail) - self._tail_cap
            if excess > 0:
                del self._tail[:excess]

    @property
    def omitted(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if self.omitted:
            sep = "" if head.endswith("\n") else "\n"
            return f"{head}{sep}[... {self.omitted} bytes omitted ...]\n{tail}"
        return head + tail


async def _pump(stream: asyncio.StreamReader, buf: _CappedBuffer) -> None:
    while chunk := await stream.read(_CHUNK):
        buf.feed(chunk)


async def _leader_exit(proc: asyncio.subprocess.Process) -> None:
    # asyncio exposes no exit event independent of the pipes, hence the polling.
    while proc.returncode is None:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def _first(seconds: float, *aws: asyncio.Future[Any]) -> bool:
    """Wait (without cancelling) until one of ``aws`` is done; False on timeout."""
    done, _ = await asyncio.wait(aws, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    return bool(done)


async def _abandon(
    spawning: asyncio.Future[asyncio.subprocess.Process], kill: Callable[[int, bool], None]
) -> None:
    """A spawn whose caller was cancelled: once it has finished, its whole tree is killed and
    its exit awaited briefly (as a cancel of a running process is)."""
    with contextlib.suppress(BaseException):
        proc = await asyncio.wait_for(spawning, _TERM_GRACE)
        kill(proc.pid, True)
        await asyncio.wait_for(proc.wait(), 1.0)


async def execute(
    args: tuple[str, ...],
    *,
    cwd: Path,
    timeout: float,  # noqa: ASYNC109
    env: Mapping[str, str] | None,
    max_output_bytes: int,
    spawn: Mapping[str, Any],
    kill: Callable[[int, bool], None],
) -> CommandResult:
    """Run ``args`` with capped, merged output; ``kill(pid, hard)`` ends its whole tree.

    On timeout the tree is asked to stop (``hard=False``), then killed; on cancellation it is
    killed at once. ``spawn`` holds the platform's extra process-creation options."""
    if not args:
        raise ValueError("empty argv")
    start = time.monotonic()
    spawning = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            **spawn,
        )
    )
    try:
        # Shielded: a cancel between the fork and the pipes' connection would otherwise run
        # asyncio's own clean-up, which kills the leader alone and then waits for the pipes
        # that its children still hold. The spawn finishes; then the whole tree is killed.
        proc = await asyncio.shield(spawning)
    except asyncio.CancelledError:
        await _abandon(spawning, kill)
        raise
    except OSError as exc:
        code = 127 if isinstance(exc, FileNotFoundError) else 126
        return CommandResult(args, code, f"{args[0]}: {exc}", False, False, 0, 0.0)
    assert proc.stdout is not None
    buf = _CappedBuffer(max_output_bytes)
    reader = asyncio.ensure_future(_pump(proc.stdout, buf))
    # ``proc.wait()`` (3.11) resolves only once the pipe is closed too, so the leader's exit
    # is watched separately: background children may keep the pipe open after it exits.
    waiter = asyncio.ensure_future(proc.wait())
    watch = asyncio.ensure_future(_leader_exit(proc))
    timed_out = False
    try:
        if not await _first(timeout, waiter, watch):
            timed_out = True
            kill(proc.pid, False)
            await _first(_TERM_GRACE, waiter, watch)
            kill(proc.pid, True)
        if not await _first(_DRAIN_GRACE, reader):
            kill(proc.pid, True)  # lingering children hold the pipe open
            await _first(_TERM_GRACE, reader)
        await _first(_TERM_GRACE, waiter)
    except asyncio.CancelledError:
        kill(proc.pid, True)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(waiter), 1.0)
        raise
    finally:
        for task in (watch, reader, waiter):
            if not task.done():
                task.cancel()
    return CommandResult(
        argv=args,
        exit_code=None if timed_out else proc.returncode,
        output=buf.text(),
        timed_out=timed_out,
        truncated=buf.omitted > 0,
        omitted_bytes=buf.omitted,
        duration=time.monotonic() - start,
    )
