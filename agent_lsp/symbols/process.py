"""`Child`: one symbol parse worker process (`child.py`) and the jobs sent to it.

Started with `subprocess` (not `multiprocessing`: no resource tracker process, no semaphores,
nothing of the parent's state copied: it is a fresh interpreter importing only the extraction
modules). `submit` sends a job and returns a `Future` of its answer; a reader thread sets the
futures as answers come back, in the order sent. Any number of threads may submit at once.

When the process ends (stopped, killed, crashed) every job still waiting fails with `ChildDied`,
and so does every later `submit`. `stop()` closes its stdin: it finishes the jobs it was sent,
then exits.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import IO, cast

from agent_lsp.symbols.child import receive, send

ROOT = Path(__file__).resolve().parents[2]  # the folder `agent_lsp` is imported from
# No `site` (-S): the child is given this process's import path instead (the folder of
# `agent_lsp` first), which saves most of its start (~40 ms of ~70).
START = "import sys; sys.path[:] = sys.argv[1:]; from agent_lsp.symbols.child import main; main()"
STOP_WAIT = 30.0  # seconds a stopped child may take to finish its jobs before it is killed


class ChildDied(Exception):
    """The worker process ended (or could not be reached) before it answered."""


class ChildError(Exception):
    """The job raised in the worker: "Type: message"."""


class Child:
    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-S", "-c", START, str(ROOT), *sys.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._requests: IO[bytes] = self._process.stdin
        self._answers: IO[bytes] = self._process.stdout
        self._lock = threading.Lock()  # the waiting jobs, the end
        self._write = threading.Lock()  # one frame at a time (never taken by the reader)
        self._ids = itertools.count()
        self._waiting: dict[int, Future[object]] = {}
        self.died: ChildDied | None = None
        self.stopped = False  # stop() was called: its end is no failure
        self.ended = threading.Event()
        self.last_used = time.monotonic()
        threading.Thread(target=self._read, name="symbols-worker-reader", daemon=True).start()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def waiting(self) -> int:
        """Jobs sent and not answered yet."""
        with self._lock:
            return len(self._waiting)

    def submit(self, name: str, *args: object) -> Future[object]:
        future: Future[object] = Future()
        with self._lock:
            if self.died is not None:
                raise self.died
            job = next(self._ids)
            self._waiting[job] = future
            self.last_used = time.monotonic()
        try:
            with self._write:
                send(self._requests, (job, name, args))
        except (OSError, ValueError) as exc:  # its end of the pipe is closed: it is ending
            if self.ended.wait(STOP_WAIT):
                return future  # failed by the reader, with how the process ended
            with self._lock:
                self._waiting.pop(job, None)
            raise ChildDied(f"the worker process cannot be reached ({exc})") from exc
        return future

    def stop(self, wait: bool = True) -> None:
        """Let it finish the jobs it was sent, then end (waiting for that when `wait`)."""
        self.stopped = True
        with self._write, contextlib.suppress(OSError, ValueError):
            self._requests.close()
        if wait and not self.ended.wait(STOP_WAIT):
            with contextlib.suppress(OSError):
                self._process.kill()
            self.ended.wait(STOP_WAIT)

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # a frame cut short, or not ours: it has ended
            while (message := receive(self._answers)) is not None:
                job, ok, value = cast(tuple[int, bool, object], message)
                with self._lock:
                    future = self._waiting.pop(job, None)
                    self.last_used = time.monotonic()
                if future is None or not future.set_running_or_notify_cancel():
                    continue  # cancelled meanwhile
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(ChildError(value))
        with contextlib.suppress(OSError):
            self._answers.close()
        code = self._process.wait()
        with self._lock:
            self.died = died = ChildDied(f"the worker process exited ({_describe(code)})")
            waiting = list(self._waiting.values())
            self._waiting.clear()
        for future in waiting:
            if future.set_running_or_notify_cancel():
                future.set_exception(died)
        with self._write, contextlib.suppress(OSError, ValueError):  # it is dead: no write waits
            self._requests.close()
        self.ended.set()


def _describe(code: int) -> str:
    if code >= 0:
        return f"status {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"
