"""`SymbolIndex`: the definitions and identifier counts of every source file under a root.

Built by walking the tree (vendored, virtualenv, VCS, cache and build directories skipped; big
files skipped), kept per file with the stamp it was parsed at (mtime, ctime, size) and the digest
of its bytes. `refresh()` reads only files whose stamp changed, and parses only those whose digest
changed too; `update_file()` takes an editor buffer's text, which then wins
over the disk until `close_file()`. Parsing happens outside the lock, so a build in a worker
thread never blocks readers for long; every query works on immutable per-file snapshots.

Parsing is done by the index's `extractor`: plain `extract` in the calling thread by default, or
one that parses elsewhere (`worker.ProcessExtractor`, in a child process, so that big files do not
hold this process's GIL). An extractor that also has `index_files` is given the changed files of
a refresh all at once (paths, not texts), to read, batch and order them as it likes.

With `cache` (a path, see `cache.cache_path`), the first refresh takes every file whose stamp (or,
failing that, digest) matches the persisted index from it instead of parsing it; the index is
saved after that first refresh and by `close()`. `parsed` and `reused` count the files parsed
from the disk and the ones taken without parsing.

The class is put together from one part per responsibility, each a module of this package:
`table.py` (the shared state, `key()` and the locked bookkeeping of the files and the name
table), `persist.py` (the persisted index: warm start and save), `refresh.py` (`build`,
`refresh`, `refresh_paths`), `buffers.py` (editor buffers) and `queries.py` (the answers); the
records it keeps and answers with are in `entries.py`, re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_lsp.symbols.buffers import Buffered
from agent_lsp.symbols.entries import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_SKIP_DIRS,
    DiskJob,
    Extractor,
    FileExtractor,
    IndexedFile,
    Reference,
    SymbolHit,
)
from agent_lsp.symbols.extract import describe_engines
from agent_lsp.symbols.queries import REFERENCE_TEXT_MAX, Queries

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_SKIP_DIRS",
    "REFERENCE_TEXT_MAX",
    "DiskJob",
    "Extractor",
    "FileExtractor",
    "IndexedFile",
    "Reference",
    "SymbolHit",
    "SymbolIndex",
]


class SymbolIndex(Buffered, Queries):
    # ------------------------------------------------------------------ status

    @property
    def built(self) -> bool:
        return self._built

    @property
    def generation(self) -> int:
        """Grows with every change; callers can cache derived data against it."""
        return self._generation

    def __len__(self) -> int:
        return len(self._files)

    def describe(self) -> str:
        more = f" (stopped at {self.max_files} files)" if self.truncated else ""
        count = len(self._files)
        files = f"{count} file{'' if count == 1 else 's'} indexed{more}"
        return f"{files}; engine: {describe_engines(self.engine)}"

    def close(self) -> None:
        """Save the index (with a cache, unless a refresh is running: it saves itself) and
        release the extractor (its child process, if any); queries keep working."""
        if self._refresh_lock.acquire(blocking=False):
            try:
                self._save()
            finally:
                self._refresh_lock.release()
        close: Callable[[], object] | None = getattr(self.extractor, "close", None)
        if close is not None:
            close()

    def release(self) -> None:
        """Give back what the extractor holds while idle (its child process, if any: a later
        parse starts it again); an agent task's end calls this."""
        release: Callable[[], object] | None = getattr(self.extractor, "release", None)
        if release is not None:
            release()
