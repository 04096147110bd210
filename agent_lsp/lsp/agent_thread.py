"""Agent tasks run on an event loop of their own, in a thread of their own.

The editor's requests are answered on the server's event loop. Everything an agent task does
(building model requests, reading the streamed answer, running tools, writing checkpoints) runs
on the agent loop instead, so none of it sits between a request and its answer; the task meets
the editor only through `CrossLoopChannel`, which carries each call over to the server's loop.
While the agent thread computes, the server's loop still needs the GIL: the interpreter's switch
interval is shortened so that a waiting thread gets it within about a millisecond rather than
five. Work that holds the GIL in one long C call (parsing big files) goes to a child process
(`agent_lsp.symbols.worker`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import logging
import sys
import threading
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # light at start-up: the server imports this module before the agent loads
    from agent_lsp.messages import AgentEvent
    from agent_lsp.seams import EditorChannel

log = logging.getLogger(__name__)
T = TypeVar("T")
SWITCH_INTERVAL = 0.001  # seconds; CPython's default is 0.005
STOP_GRACE = 5.0  # seconds a cancelled task gets to clean up at shutdown
BUFFERS_TIMEOUT = 30.0


def settle_heap() -> None:
    """Put every object alive now out of the cyclic collector's reach (`gc.freeze`). What the
    agent's imports build (pydantic models, lsprotocol, openai's types) lives as long as the
    process, yet each full collection walked all of it and stopped every thread for ~100 ms
    (measured while a task ran). Called once the agent has loaded, and once the model client
    has. Frozen objects are still freed when their reference count drops; only cyclic garbage
    among them stays."""
    gc.freeze()


class AgentThread:
    """One daemon thread running one event loop, started on first use."""

    def __init__(self, name: str = "agent-lsp agent") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        # per loop: the outcomes of work sent to it, settled (cancelled) if it ends first
        self._pending: dict[asyncio.AbstractEventLoop, set[concurrent.futures.Future[Any]]] = {}

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                ready = threading.Event()
                loop = asyncio.new_event_loop()
                self._pending[loop] = set()
                self._thread = threading.Thread(
                    target=self._serve, args=(loop, ready), name=self.name, daemon=True
                )
                sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    @property
    def started(self) -> bool:
        return self._loop is not None and not self._loop.is_closed()

    def _serve(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()
            with self._lock:
                left = self._pending.pop(loop, set())
            for outcome in left:  # sent as the loop stopped: it never ran
                outcome.cancel()

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the agent loop and return (or raise) its result. Cancelling the
        caller cancels `work` there and waits until it has stopped before re-raising. The
        first call starts the thread from a worker thread: the caller's loop (the server's)
        does not stop while the new thread comes up."""
        loop = self._loop
        if loop is None or loop.is_closed():
            try:
                loop = await asyncio.to_thread(lambda: self.loop)
            except BaseException:
                work.close()
                raise
        outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
        box: list[asyncio.Task[T]] = []
        with self._lock:
            pending = self._pending.get(loop)
            if pending is None:  # that loop has ended already: do not wait for it
                work.close()
                raise asyncio.CancelledError
            pending.add(outcome)
        outcome.add_done_callback(pending.discard)

        def start() -> None:
            task = asyncio.ensure_future(work)
            box.append(task)
            task.add_done_callback(lambda done: _settle(done, outcome))

        def cancel() -> None:
            for task in box:
                task.cancel()

        try:
            loop.call_soon_threadsafe(start)
        except RuntimeError:  # the loop closed just now
            work.close()
            raise asyncio.CancelledError from None
        waiter = asyncio.wrap_future(outcome)
        try:
            return await asyncio.shield(waiter)
        except asyncio.CancelledError:
            if not waiter.done():  # the caller was cancelled, not the work
                with contextlib.suppress(RuntimeError):  # (the agent loop closed meanwhile)
                    loop.call_soon_threadsafe(cancel)  # after start(): the loop keeps the order
                with contextlib.suppress(BaseException):  # stopped: cancelled, or failed stopping
                    await waiter
            raise

    def close(self, grace: float = STOP_GRACE) -> None:
        """Cancel what runs on the agent loop, give it `grace` seconds to clean up (kill its
        process groups), then stop the loop. Does not wait: the thread is a daemon."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None or loop.is_closed():
            return

        async def stop() -> None:
            current = asyncio.current_task()
            pending = [task for task in asyncio.all_tasks() if task is not current]
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=grace)
            asyncio.get_running_loop().stop()

        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            asyncio.run_coroutine_threadsafe(stop(), loop)


def _settle(task: asyncio.Task[T], outcome: concurrent.futures.Future[T]) -> None:
    if task.cancelled():
        outcome.cancel()
    elif (error := task.exception()) is not None:
        outcome.set_exception(error)
    else:
        outcome.set_result(task.result())


class CrossLoopChannel:
    """An `EditorChannel` for code on the agent loop whose calls run on the server's loop
    (pygls, the document store and the transport are not thread-safe)."""

    def __init__(self, inner: EditorChannel, home: asyncio.AbstractEventLoop) -> None:
        self.inner = inner
        self.home = home
        self._home_thread = threading.get_ident()

    async def _at_home(self, work: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.home))

    def buffers(self) -> Mapping[Path, str]:
        if threading.get_ident() == self._home_thread:
            return self.inner.buffers()

        async def snapshot() -> Mapping[Path, str]:
            return dict(self.inner.buffers())

        return asyncio.run_coroutine_threadsafe(snapshot(), self.home).result(BUFFERS_TIMEOUT)

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        await self._at_home(self.inner.apply_edit(path, new_text, label))

    async def report(self, event: AgentEvent) -> None:
        await self._at_home(self.inner.report(event))

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        return await self._at_home(self.inner.ask(question, options))
