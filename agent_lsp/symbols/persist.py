"""The persisted index's side of a `SymbolIndex` (with `cache`, a path: see `cache.cache_path`):
what a warm start takes from it, and what is saved back.

The first refresh loads the persisted entries (`_load_cache`) and puts every file whose stamp
matches at once (`_put_new`), keeping the saved name table packed when it is the table of
exactly those files. `_save` writes the disk's entries (never an editor buffer's) when they
changed since the last save.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_lsp.symbols import cache as persisted
from agent_lsp.symbols.entries import IndexedFile
from agent_lsp.symbols.table import FileTable, forget, names_of_files


class Persisted(FileTable):
    def _load_cache(self) -> tuple[persisted.Entries, bytes]:
        """The persisted entries and their packed name table, for the first refresh with a
        cache (none otherwise, or when the cache cannot be used)."""
        if self._built or self.cache is None:
            return {}, b""
        return persisted.load_index(self.cache, self.engine, self.root)

    def _put_new(
        self, entries: Sequence[IndexedFile], cached: persisted.Entries, names: bytes
    ) -> int:
        """`_put` of many entries at once (the files of a warm start), skipping any file that
        is indexed meanwhile; returns how many were put. The name table saved with `cached`
        is kept packed when it is the table of exactly the files put (see `_names`); when
        some cached files are not put now, it is unpacked and their keys taken off (their
        definitions are read to find them), unless they are many: then it is built from the
        definitions of the files put."""
        files = self._files
        fresh = [entry for entry in entries if entry.path not in files]
        put = {entry.path for entry in fresh}
        others = [key for key in cached if key not in put]
        for entry in fresh:
            files[entry.path] = entry
        if fresh:
            self._generation += 1
        if names and not others and not self._by_name and self._packed_names is None:
            self._packed_names = names
            return len(fresh)
        table = persisted.unpack_names(names) if len(others) * 4 <= len(cached) else None
        if table is not None:
            for key in others:
                forget(table, key, cached[key][2].definitions)
        else:
            table = names_of_files(fresh)
        by_name = self._names()
        if not by_name:
            self._by_name = table
        else:
            for name, keys in table.items():
                by_name[name] = (*by_name.get(name, ()), *keys)
        return len(fresh)

    def _save(self) -> None:
        """Persist the disk's entries (with a cache, when they changed since the last save)."""
        if self.cache is None or not self._built or self._saved == self._generation:
            return
        with self._lock:
            generation = self._generation
            entries: persisted.Entries = {
                key: ((f.mtime_ns, f.ctime_ns, f.size), f.digest, f.symbols)
                for key, f in self._files.items()
                if f.buffer is None and f.digest
            }
            names: persisted.Names | bytes | None = self._packed_names
            if names is None:
                names = dict(self._by_name)
                for key, f in self._files.items():
                    if key not in entries:  # an editor buffer: not saved
                        forget(names, key, f.symbols.definitions)
        if persisted.save(self.cache, self.root, entries, self.engine, names=names):
            self._saved = generation
