"""`ProcessExtractor`: `extract()` in a child process, so that big files never stall this one.

tree-sitter holds the GIL for the whole of a parse and of a query: a 700 KB file keeps every other
thread of the process (the language server's event loop among them) off the CPU for ~135 ms.
A `ProcessExtractor` is called like `extract(text, language, engine)` and returns the same
`FileSymbols`, but sends texts of `threshold` characters or more to one child process; smaller
ones (well under a millisecond of work) are extracted in the calling thread.

- The child is started with "spawn" (the parent is multi-threaded: forking it could copy a lock
  held by another thread), on the first call that needs it, and reused afterwards.
- A cold build (`index_files()` of `pool_bytes`, 2 MiB, or more) goes to a pool of `workers`
  processes (one per core by default) instead, also "spawn": started for that build and shut
  down before it returns, so that no worker outlives it (memory) and none inherits this
  process's state. Workers get paths and send back plain tuples; each file is read, hashed and
  parsed once, in one worker.
- `extract_files()` extracts files from the disk: the child reads them itself and takes many per
  round trip, a few batches in flight so that it never waits for the parent; the parent turns
  the results back into `FileSymbols` and, rather than wait, extracts small files itself.
- When the child cannot start, dies (tree-sitter can crash) or fails in any other way, that call
  is done in the calling thread instead, exactly as `extract` would (with its exceptions). A
  later call starts a fresh child, up to `max_crashes` children; after that everything stays in
  the calling thread. The first death, and giving up, are logged as warnings.
- The child exits with its parent: a thread in it waits for the parent's end of the pipe that
  spawned it to close. It ignores SIGINT (the parent decides when it stops), and once started
  has its stdin and stdout on /dev/null: it does not touch the language server's stream.
- `close()` stops the child (idempotent); later calls run in the calling thread.
- Thread-safe: any number of threads may call it at once (the child serves them in turn).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TypeVar

from agent_lsp.symbols.disk import Indexed, index_disk_file
from agent_lsp.symbols.extract import extract
from agent_lsp.symbols.index import DiskJob
from agent_lsp.symbols.model import Definition, Engine, FileSymbols, Language

log = logging.getLogger(__name__)

THRESHOLD = 4096  # characters (bytes for files): ~0.7 ms of in-thread extraction
BATCH_BYTES = 64 * 1024  # files per round trip, by size (~12 ms of work in the child)
BATCH_FILES = 64  # and by count
IN_FLIGHT = 2  # batches sent ahead of the one being collected
MAX_CRASHES = 3
POOL_BYTES = 2 * 1024 * 1024  # files to read at once that go to a pool (~0.2 s of extraction)

# What crosses the pipe: plain tuples unpickle several times faster than the dataclasses.
Row = tuple[str, str, int, int, str | None, str]
Payload = tuple[Language, str, tuple[Row, ...], dict[str, int]]
DiskFile = tuple[Path, Language, int]  # path, language, size in bytes
Hashed = tuple[Payload | None, bytes]  # `disk.Indexed` as it crosses the pipe
_T = TypeVar("_T")
_Job = tuple[ProcessPoolExecutor, Future[_T]]  # a call sent to the child, and its pool


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
    ) -> None:
        self.workers = _cores() if workers is None else workers
        self.pool_bytes = pool_bytes
        self.threshold = threshold
        self.batch_bytes = batch_bytes
        self.batch_files = batch_files
        self.max_crashes = max_crashes
        self.crashes = 0  # children that died or could not start
        self.served = 0  # jobs (calls, batches of files) the child answered
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False
        self._warned = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ calls

    def __call__(self, text: str, language: Language, engine: Engine = "auto") -> FileSymbols:
        if len(text) < self.threshold:
            return extract(text, language, engine)
        payload = self._run(_extract_text, text, language, engine)
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
        instead of waiting. All in the calling thread when the files are small altogether; a
        pool of `workers` processes instead of the one child when they are `pool_bytes` or
        more (a cold build), shut down before this returns."""
        total = sum(size for _, _, size, _ in files)
        if total < self.threshold:
            for position, (path, language, _, expected) in enumerate(files):
                yield position, index_disk_file(path, language, engine, expected, extract)
            return
        big = deque(n for n, (_, _, size, _) in enumerate(files) if size >= self.threshold)
        small = deque(n for n, (_, _, size, _) in enumerate(files) if size < self.threshold)
        pending: deque[tuple[list[int], _Job[list[Hashed | None]] | None]] = deque()
        pool = self._build_pool() if total >= self.pool_bytes else None
        in_flight = IN_FLIGHT if pool is None else IN_FLIGHT * self.workers

        def here(position: int) -> tuple[int, Indexed | None]:
            path, language, _, expected = files[position]
            return position, index_disk_file(path, language, engine, expected, extract)

        def send(batch: list[int]) -> _Job[list[Hashed | None]] | None:
            jobs: list[tuple[str, Language, bytes | None]] = [
                (str(files[n][0]), files[n][1], files[n][3]) for n in batch
            ]
            if pool is None:
                return self._submit(_index_paths, jobs, engine)
            try:
                return pool, pool.submit(_index_paths, jobs, engine)
            except Exception:  # the pool broke: the rest is done here
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
                results = self._result(job)
                if results is None:
                    yield from map(here, batch)
                else:
                    yield from zip(batch, map(_rebuild_hashed, results), strict=True)
        finally:
            for _, job in pending:  # the caller stopped early, or an in-thread extraction raised
                if job is not None:
                    job[1].cancel()
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _build_pool(self) -> ProcessPoolExecutor | None:
        """A pool of `workers` fresh processes for one big batch of files (None: use the one
        child, or the calling thread)."""
        with self._lock:
            if self.workers < 2 or self._closed or self.crashes >= self.max_crashes:
                return None
        try:
            context = multiprocessing.get_context("spawn")
            return ProcessPoolExecutor(
                max_workers=self.workers, mp_context=context, initializer=_child_started
            )
        except Exception:
            return None

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
            pool = self._pool
            processes = None if pool is None else pool._processes  # pyright: ignore[reportPrivateUsage]
            return next(iter(list(processes or ())), None)

    def _run(self, function: Callable[..., _T], *args: object) -> _T | None:
        """`function(*args)` in the child, or None when that failed (do it here instead)."""
        return self._result(self._submit(function, *args))

    def _submit(self, function: Callable[..., _T], *args: object) -> _Job[_T] | None:
        """Send `function(*args)` to the child (started if need be); None when there is none."""
        with self._lock:
            if self._closed or self.crashes >= self.max_crashes:
                return None
            pool = self._pool
            try:
                if pool is None:
                    context = multiprocessing.get_context("spawn")
                    pool = self._pool = ProcessPoolExecutor(
                        max_workers=1, mp_context=context, initializer=_child_started
                    )
                return pool, pool.submit(function, *args)
            except Exception as exc:  # the child could not start, or died already
                self._failed(pool, exc)
                return None

    def _result(self, job: _Job[_T] | None) -> _T | None:
        """The job's result, or None when it failed in any way (then redo it here)."""
        if job is None:
            return None
        pool, future = job
        try:
            result = future.result()
        except BrokenProcessPool as exc:  # the child died
            with self._lock:
                self._failed(pool, exc)
            return None
        except Exception:  # raised in the child, or cancelled by close()
            return None
        with self._lock:
            self.served += 1
        return result

    def _failed(self, pool: ProcessPoolExecutor | None, exc: Exception) -> None:
        """Count a dead child once (several calls may see it) and drop it; under the lock."""
        if pool is not None and pool is not self._pool:
            return
        self._pool = None
        self.crashes += 1
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
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

    def close(self) -> None:
        """Stop the child (waiting for a running extraction); later calls run in-thread."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

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


# ---------------------------------------------------------------------- run in the child


def _payload(symbols: FileSymbols) -> Payload:
    rows = tuple(
        (d.name, d.kind, d.line, d.end_line, d.container, d.signature) for d in symbols.definitions
    )
    return symbols.language, symbols.engine, rows, dict(symbols.identifiers)


def _extract_text(text: str, language: Language, engine: Engine) -> Payload:
    return _payload(extract(text, language, engine))


def _index_paths(
    files: list[tuple[str, Language, bytes | None]], engine: Engine
) -> list[Hashed | None]:
    out: list[Hashed | None] = []
    for path, language, expected in files:
        result = index_disk_file(Path(path), language, engine, expected, extract)
        if result is None:
            out.append(None)
        else:
            symbols, found = result
            out.append((None if symbols is None else _payload(symbols), found))
    return out


def _child_started() -> None:
    """In the child, before any work: exit with the parent, leave SIGINT and stdio alone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: BaseProcess) -> None:
    parent.join()  # returns when the parent's end of the spawn pipe closes: it has died
    os._exit(0)
