"""`ChildKeeper`: the one long-lived child process of a `ProcessExtractor` (`worker.py`), and
its life.

- It is started on the first job that needs it (`_submit`) and reused while there is work.
- It stops when idle: `idle_seconds` after its last job (a thread per child watches), or at once
  on `release()` (unless it is working) or `close()`. A later job starts a fresh one.
- A job whose child died, or that failed in any other way, gives None (`_result`): the caller
  does it in its own thread. Deaths are counted once per child (`_failed`); after `max_crashes`
  no child starts again. The first death, and giving up, are logged as warnings.
- `crashes`, `served` and `started` count children that died or could not start, jobs a child
  answered, and children started. Thread-safe: everything is done under `_lock`.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future

from agent_lsp.symbols.process import Child, ChildDied

log = logging.getLogger("agent_lsp.symbols.worker")  # the warnings are the `ProcessExtractor`'s

MAX_CRASHES = 3
IDLE_SECONDS = 30.0  # the child stops after this long without a job

Job = tuple[Child, Future[object]]  # a job sent to a child, and that child


class ChildKeeper:
    def __init__(
        self, *, max_crashes: int = MAX_CRASHES, idle_seconds: float = IDLE_SECONDS
    ) -> None:
        self.max_crashes = max_crashes
        self.idle_seconds = idle_seconds
        self.crashes = 0  # children that died or could not start
        self.served = 0  # jobs (calls, batches of files) a child answered
        self.started = 0  # children started (the builds' pools left out)
        self._child: Child | None = None
        self._warned = False
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The child's process id, or None while there is none."""
        with self._lock:
            child = self._child
            return None if child is None or child.died is not None else child.pid

    def _submit(self, name: str, *args: object) -> Job | None:
        """Send a job to the child (started if need be); None when there is none."""
        with self._lock:
            if self.crashes >= self.max_crashes:
                return None
            child = self._child
            try:
                if child is None:
                    child = self._child = Child()
                    self.started += 1
                    threading.Thread(
                        target=self._stop_when_idle, args=(child,), daemon=True
                    ).start()
                return child, child.submit(name, *args)
            except Exception as exc:  # the child could not start, or died already
                self._failed(child, exc)
                return None

    def _result(self, job: Job | None) -> object | None:
        """The job's result, or None when it failed in any way (then redo it here)."""
        if job is None:
            return None
        child, future = job
        try:
            result = future.result()
        except ChildDied as exc:
            with self._lock:
                self._failed(child, exc)
            return None
        except Exception:  # raised in the child, or cancelled
            return None
        with self._lock:
            self.served += 1
        return result

    def _failed(self, child: Child | None, exc: Exception) -> None:
        """Count a dead child once (several calls may see it) and drop it; under the lock."""
        if child is not None and child is not self._child:
            return  # a build's, or one stopped meanwhile
        self._child = None
        self.crashes += 1
        if child is not None:
            child.stop(wait=False)
        given_up = self.crashes >= self.max_crashes
        if not self._warned or given_up:
            self._warned = True
            later = "from now on" if given_up else "until a fresh worker starts on a later call"
            log.warning(
                "symbol extraction worker process failed (%s: %s; %d of %d): extracting in the "
                "calling thread %s",
                type(exc).__name__,
                exc,
                self.crashes,
                self.max_crashes,
                later,
            )

    def _stop_when_idle(self, child: Child) -> None:
        """A thread per child: stop it `idle_seconds` after its last job."""
        while True:
            with self._lock:
                if self._child is not child:
                    return
                left = child.last_used + self.idle_seconds - time.monotonic()
                if left <= 0 and not child.waiting:
                    self._child = None
                    break
            if child.ended.wait(max(left, 0.01) if left > 0 else min(self.idle_seconds, 1.0)):
                return  # it died: the next call notices (a crash), or `_failed` did
        child.stop()

    def release(self) -> bool:
        """Stop the child now unless it is working (a finished task: its memory goes back);
        True when none is left. A later call starts a fresh one."""
        with self._lock:
            child = self._child
            if child is None:
                return True
            if child.died is None and child.waiting:
                return False
            self._child = None
        child.stop()
        return True

    def close(self) -> None:
        """Stop the child (it finishes the jobs it was sent). Later calls start a fresh one."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            child.stop()
