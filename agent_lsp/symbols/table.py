"""`FileTable`: the state every part of a `SymbolIndex` shares, and the bookkeeping that
changes it.

That state is the index's settings, the files indexed (root-relative key -> an immutable
`IndexedFile`) and the name table (defined name -> keys of the files defining it). `_put` and
`_drop` change the two together, under `_lock`, and count every change in `_generation`. A warm
start may leave the name table packed (the bytes the persisted index holds, see `cache.py`):
`_names()` unpacks it the first time a query or a change needs it.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from agent_lsp.symbols import cache as persisted
from agent_lsp.symbols.entries import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_SKIP_DIRS,
    Extractor,
    IndexedFile,
)
from agent_lsp.symbols.extract import extract
from agent_lsp.symbols.model import Definition, Engine
from agent_lsp.symbols.packed import defined_names
from agent_lsp.symbols.walk import Walker


def forget(table: dict[str, tuple[str, ...]], key: str, definitions: Sequence[Definition]) -> None:
    """Take `key` off the names of `definitions` in the name table."""
    for name in defined_names(definitions):
        keys = table.get(name, ())
        if key in keys:
            rest = tuple(k for k in keys if k != key)
            if rest:
                table[name] = rest
            else:
                del table[name]


def names_of_files(files: Iterable[IndexedFile]) -> dict[str, tuple[str, ...]]:
    """The name table of `files`, built from their definitions."""
    return persisted.names_of({f.path: ((-1, -1, -1), b"", f.symbols) for f in files})


class FileTable:
    def __init__(
        self,
        root: Path,
        *,
        engine: Engine = "auto",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_files: int = DEFAULT_MAX_FILES,
        skip_dirs: Iterable[str] = DEFAULT_SKIP_DIRS,
        extractor: Extractor | None = None,
        cache: Path | None = None,
    ) -> None:
        self.root = root.resolve()
        self.cache = cache
        self.parsed = 0  # files read from the disk and parsed
        self.reused = 0  # files taken from the persisted index, or found unchanged by digest
        self.engine: Engine = engine
        self.extractor: Extractor = extract if extractor is None else extractor
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.skip_dirs = frozenset(skip_dirs)
        self.truncated = False  # more than max_files candidates were found
        self._files: dict[str, IndexedFile] = {}
        # name -> keys of the files defining it; tuples, which the cyclic GC stops tracking (a
        # big index as lists made each full collection walk ~40,000 more objects)
        self._by_name: dict[str, tuple[str, ...]] = {}
        self._packed_names: bytes | None = None  # a warm start's table, until first used
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._built = False
        self._generation = 0
        self._totals: tuple[int, Counter[str]] | None = None
        self._saved = -1  # the generation last saved to the cache
        self._walker: Walker | None = None

    def key(self, path: Path | str) -> str | None:
        """The index key (root-relative POSIX path) of `path`, or None outside the root."""
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        candidate = Path(os.path.normpath(candidate))
        if not candidate.is_relative_to(self.root):
            candidate = candidate.resolve()
            if not candidate.is_relative_to(self.root):
                return None
        return candidate.relative_to(self.root).as_posix()

    # ------------------------------------------------------------------ bookkeeping (locked)

    def _put(self, key: str, entry: IndexedFile) -> None:
        self._drop(key)
        self._files[key] = entry
        by_name = self._names()
        for name in defined_names(entry.symbols.definitions):
            keys = by_name.get(name, ())
            if key not in keys:
                by_name[name] = (*keys, key)
        self._generation += 1

    def _names(self) -> dict[str, tuple[str, ...]]:
        """The name table (locked), unpacked first if a warm start left it packed: it is
        then the table of exactly the files indexed (any change unpacks it first)."""
        packed = self._packed_names
        if packed is not None:
            self._packed_names = None
            table = persisted.unpack_names(packed)
            self._by_name = names_of_files(list(self._files.values())) if table is None else table
        return self._by_name

    def _drop(self, key: str) -> None:
        old = self._files.pop(key, None)
        if old is None:
            return
        forget(self._names(), key, old.symbols.definitions)
        self._generation += 1
