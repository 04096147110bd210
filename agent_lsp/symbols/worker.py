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
  falls back to the calling thread because the child was stopped. This life of the one child,
  and the counting of its deaths (below), is kept by `keeper.ChildKeeper`, which
  `ProcessExtractor` extends with the jobs it sends.
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

import os
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

from agent_lsp.symbols.child import Hashed, PathJob, Payload
from agent_lsp.symbols.disk import Indexed, index_disk_file
from agent_lsp.symbols.entries import DiskJob
from agent_lsp.symbols.extract import extract
from agent_lsp.symbols.keeper import IDLE_SECONDS, MAX_CRASHES, ChildKeeper, Job
from agent_lsp.symbols.model import Definition, Engine, FileSymbols, Language
from agent_lsp.symbols.packed import Counts, Definitions
from agent_lsp.symbols.process import Child

THRESHOLD = 4096  # characters (bytes for files): ~0.7 ms of in-thread extraction
BATCH_BYTES = 64 * 1024  # files per round trip, by size (~12 ms of work in the child)
BATCH_FILES = 64  # and by count
IN_FLIGHT = 2  # batches sent ahead of the one being collected
POOL_BATCH_BYTES = 256 * 1024  # a pool's batches (~15 ms of work in a worker)
POOL_BATCH_FILES = 256
POOL_BYTES = 2 * 1024 * 1024  # files to read at once that go to a pool (~0.2 s of extraction)

DiskFile = tuple[Path, Language, int]  # path, language, size in bytes


class ProcessExtractor(ChildKeeper):
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
        super().__init__(max_crashes=max_crashes, idle_seconds=idle_seconds)
        self.workers = _cores() if workers is None else workers
        self.pool_bytes = pool_bytes
        self.threshold = threshold
        self.batch_bytes = batch_bytes
        self.batch_files = batch_files

    # ------------------------------------------------------------------ calls

    def __call__(
        self, text: str, language: Language, engine: Engine = "auto", *, key: str | None = None
    ) -> FileSymbols:
        """`extract(text, language, engine, key=key)`, big texts in the child."""
        if len(text) < self.threshold:
            return extract(text, language, engine, key=key)
        job = self._submit("text", text, language, engine, key)
        payload = cast(Payload | None, self._result(job))
        return extract(text, language, engine, key=key) if payload is None else _rebuild(payload)

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
        get done. The child reads, hashes and extracts them in batches, biggest files first;
        while it works, the calling thread does small files (under `threshold`) from the other
        end instead of waiting. All in the calling thread when the files are small altogether;
        `workers` children instead of the one when they are `pool_bytes` or more (a cold
        build), in bigger batches and with every file (this thread only hands them out),
        stopped before this returns."""
        total = sum(size for _, _, size, _ in files)
        if total < self.threshold:
            for position, (path, language, _, expected) in enumerate(files):
                yield position, index_disk_file(path, language, engine, expected, extract)
            return
        pool = self._build_pool() if total >= self.pool_bytes else []
        # a pool takes every file, in bigger batches: this thread only hands them out (taking
        # small files itself, it would compete with the workers for the cores)
        threshold = 1 if pool else self.threshold
        limits = (POOL_BATCH_BYTES, POOL_BATCH_FILES) if pool else None
        big = deque(
            sorted(  # biggest first, so that the last batches are small and end together
                (n for n, (_, _, size, _) in enumerate(files) if size >= threshold),
                key=lambda n: -files[n][2],
            )
        )
        small = deque(n for n, (_, _, size, _) in enumerate(files) if size < threshold)
        pending: deque[tuple[list[int], Job | None]] = deque()
        in_flight = IN_FLIGHT * max(1, len(pool))

        def here(position: int) -> tuple[int, Indexed | None]:
            path, language, _, expected = files[position]
            return position, index_disk_file(path, language, engine, expected, extract)

        def send(batch: list[int]) -> Job | None:
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
                while len(pending) <= in_flight and (
                    batch := self._batch(files, big, small, limits)
                ):
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

    def _batch(
        self,
        files: Sequence[DiskJob],
        big: deque[int],
        small: deque[int],
        limits: tuple[int, int] | None = None,
    ) -> list[int]:
        """The positions of the child's next batch: big files in order, then small ones from the
        end (the calling thread takes them from the front)."""
        batch: list[int] = []
        size = 0
        most_bytes, most_files = (self.batch_bytes, self.batch_files) if limits is None else limits
        while (big or small) and len(batch) < most_files:
            position = big[0] if big else small[-1]
            size += files[position][2]
            if batch and size > most_bytes:
                break
            batch.append(big.popleft() if big else small.pop())
        return batch

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
    """A disk file's `FileSymbols`, its definitions and counts left packed (names come
    interned as the child interned them (`marshal` keeps that); the counts' names are
    interned when they are unpacked)."""
    if result is None:
        return None
    packed, found = result
    if packed is None:
        return None, found
    language, engine, definitions, identifiers, names = packed
    symbols = FileSymbols(
        language, sys.intern(engine), Definitions(definitions, names), Counts(identifiers)
    )
    return symbols, found


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
