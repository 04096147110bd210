"""`ProcessExtractor`: `extract()` in a child process, so that big files never stall this one.

tree-sitter holds the GIL for the whole of a parse and of a query: a 700 KB file keeps every other
thread of the process (the language server's event loop among them) off the CPU for ~135 ms.
A `ProcessExtractor` is called like `extract(text, language, engine)` and returns the same
`FileSymbols`, but sends texts of `threshold` characters or more to one child process; smaller
ones (well under a millisecond of work) are extracted in the calling thread.

- The child (`process.Child`: a fresh interpreter started with `subprocess`, talking over two
  pipes; no `multiprocessing`, so no resource tracker process either) is started on the first
  call that needs it and reused while there is work.
- It stops when idle: `idle_seconds` after its last job, or at once on `release()` (the end of
  an agent task) or `close()`. A later call that needs it starts a fresh one: parsing never
  falls back to the calling thread because the child was stopped.
- A cold build (`index_files()` of `pool_bytes`, 2 MiB, or more) goes to `workers` children
  (one per core by default) instead: started for that build and stopped before it returns, so
  that none outlives it. Children get paths and send back plain tuples; each file is read,
  hashed and parsed once, in one child.
- `extract_files()` extracts files from the disk: the child reads them itself and takes many per
  round trip, a few batches in flight so that it never waits for the parent; the parent turns
  the results back into `FileSymbols` and, rather than wait, extracts small files itself.
- When the child cannot start, dies (tree-sitter can crash) or fails in any other way, that call
  is done in the calling thread instead, exactly as `extract` would (with its exceptions). A
  later call starts a fresh child, up to `max_crashes` children; after that everything stays in
  the calling thread. The first death, and giving up, are logged as warnings.
- The child exits with its parent (its stdin closes), ignores SIGINT and keeps its standard
  streams on /dev/null (`child.py`): it does not touch the language server's stream.
- Thread-safe: any number of threads may call it at once (the child serves them in turn).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import cast

from agent_lsp.symbols.child import Hashed, PathJob, Payload
from agent_lsp.symbols.disk import Indexed, index_disk_file
from agent_lsp.symbols.extract import extract
from agent_lsp.symbols.index import DiskJob
from agent_lsp.symbols.model import Definition, Engine, FileSymbols, Language
from agent_lsp.symbols.process import Child, ChildDied

log = logging.getLogger(__name__)

THRESHOLD = 4096  # characters (bytes for files): ~0.7 ms of in-thread extraction
BATCH_BYTES = 64 * 1024  # files per round trip, by size (~12 ms of work in the child)
BATCH_FILES = 64  # and by count
IN_FLIGHT = 2  # batches sent ahead of the one being collected
MAX_CRASHES = 3
POOL_BYTES = 2 * 1024 * 1024  # files to read at once that go to a pool (~0.2 s of extraction)
IDLE_SECONDS = 30.0  # the child stops after this long without a job

DiskFile = tuple[Path, Language, int]  # path, language, size in bytes
_Job = tuple[Child, Future[object]]  # a job sent to a child, and that child


class ProcessExtractor:
    """`extract(text, language, engine)` with the big texts done in one child process."""

    def __init__(
        self,
        *,
        threshold: int = THRESHOLD,
        batch_bytes: int = BATCH_BYTES,
        batch_files: int = BATCH_FILES,
        max_crashes: int = MAX_CRASHES,
        workers: int | None = None,
        pool_bytes: int = POOL_BYTES,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self.workers = _cores() if workers is None else workers
        self.pool_bytes = pool_bytes
        self.threshold = threshold
        self.batch_bytes = batch_bytes
        self.batch_files = batch_files
        self.max_crashes = max_crashes
        self.idle_seconds = idle_seconds
        self.crashes = 0  # children that died or could not start
        self.served = 0  # jobs (calls, batches of files) a child answered
        self.started = 0  # children started (the builds' pools left out)
        self._child: Child | None = None
        self._warned = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ calls

    def __call__(self, text: str, language: Language, engine: Engine = "auto") -> FileSymbols:
        if len(text) < self.threshold:
            return extract(text, language, engine)
        payload = cast(Payload | None, self._result(self._submit("text", text, language, engine)))
        return extract(text, language, engine) if payload is None else _rebuild(payload)

    def extract_files(
        self, files: Sequence[DiskFile], engine: Engine = "auto"
    ) -> Iterator[tuple[int, FileSymbols | None]]:
        """(position in `files`, its symbols or None when it cannot be read) for every file, in
        the order they get done (`index_files` without digests)."""
        jobs: list[DiskJob] = [(path, language, size, None) for path, language, size in files]
        for position, result in self.index_files(jobs, engine):
            yield position, None if result is None else result[0]

    def index_files(
        self, files: Sequence[DiskJob], engine: Engine = "auto"
    ) -> Iterator[tuple[int, Indexed | None]]:
        """(position in `files`, `disk.index_disk_file` of it) for every file, in the order they
        get done. The child reads, hashes and extracts them in batches, big files first; while
        it works, the calling thread does small files (under `threshold`) from the other end
        instead of waiting. All in the calling thread when the files are small altogether;
        `workers` children instead of the one when they are `pool_bytes` or more (a cold
        build), stopped before this returns."""
        total = sum(size for _, _, size, _ in files)
        if total < self.threshold:
            for position, (path, language, _, expected) in enumerate(files):
                yield position, index_disk_file(path, language, engine, expected, extract)
            return
        big = deque(n for n, (_, _, size, _) in enumerate(files) if size >= self.threshold)
        small = deque(n for n, (_, _, size, _) in enumerate(files) if size < self.threshold)
        pending: deque[tuple[list[int], _Job | None]] = deque()
        pool = self._build_pool() if total >= self.pool_bytes else []
        in_flight = IN_FLIGHT * max(1, len(pool))

        def here(position: int) -> tuple[int, Indexed | None]:
            path, language, _, expected = files[position]
            return position, index_disk_file(path, language, engine, expected, extract)

        def send(batch: list[int]) -> _Job | None:
            jobs: list[PathJob] = [(str(files[n][0]), files[n][1], files[n][3]) for n in batch]
            if not pool:
                return self._submit("paths", jobs, engine)
            child = min(pool, key=lambda c: c.waiting)
            try:
                return child, child.submit("paths", jobs, engine)
            except Exception:  # that child ended: this batch is done here
                return None

        try:
            while True:
                while len(pending) <= in_flight and (batch := self._batch(files, big, small)):
                    pending.append((batch, send(batch)))
                if not pending:
                    return
                batch, job = pending[0]
                if job is not None and small and not job[1].done():
                    yield here(small.popleft())
                    continue
                pending.popleft()
                results = cast(list[Hashed | None] | None, self._result(job))
                if results is None:
                    yield from map(here, batch)
                else:
                    yield from zip(batch, map(_rebuild_hashed, results), strict=True)
        finally:
            for _, job in pending:  # the caller stopped early, or an in-thread extraction raised
                if job is not None:
                    job[1].cancel()
            for child in pool:
                child.stop(wait=False)
            for child in pool:
                child.stop()

    def _build_pool(self) -> list[Child]:
        """`workers` fresh children for one big batch of files (none: use the one child, or
        the calling thread)."""
        with self._lock:
            if self.workers < 2 or self.crashes >= self.max_crashes:
                return []
        pool: list[Child] = []
        for _ in range(self.workers):
            try:
                pool.append(Child())
            except Exception:
                break
        return pool

    def _batch(self, files: Sequence[DiskJob], big: deque[int], small: deque[int]) -> list[int]:
        """The positions of the child's next batch: big files in order, then small ones from the
        end (the calling thread takes them from the front)."""
        batch: list[int] = []
        size = 0
        while (big or small) and len(batch) < self.batch_files:
            position = big[0] if big else small[-1]
            size += files[position][2]
            if batch and size > self.batch_bytes:
                break
            batch.append(big.popleft() if big else small.pop())
        return batch

    # ------------------------------------------------------------------ the child

    @property
    def pid(self) -> int | None:
        """The child's process id, or None while there is none."""
        with self._lock:
            child = self._child
            return None if child is None or child.died is not None else child.pid

    def _submit(self, name: str, *args: object) -> _Job | None:
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

    def _result(self, job: _Job | None) -> object | None:
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

    def __enter__(self) -> ProcessExtractor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _rebuild(payload: Payload) -> FileSymbols:
    """`FileSymbols` from the child's tuples, names interned as `extract` interns them."""
    language, engine, rows, identifiers = payload
    intern = sys.intern
    definitions = tuple(
        Definition(
            intern(name),
            intern(kind),
            line,
            end_line,
            None if container is None else intern(container),
            signature,
        )
        for name, kind, line, end_line, container, signature in rows
    )
    return FileSymbols(
        language,
        intern(engine),
        definitions,
        {intern(name): count for name, count in identifiers.items()},
    )


def _rebuild_hashed(result: Hashed | None) -> Indexed | None:
    if result is None:
        return None
    payload, found = result
    return None if payload is None else _rebuild(payload), found


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
