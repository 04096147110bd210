"""Keeping a `SymbolIndex` current with the disk: `build`, `refresh` and `refresh_paths`.

`refresh()` walks the tree (`walk.Walker`: vendored, virtualenv, VCS, cache and build directories
skipped, big files skipped, unchanged folders' listings reused), re-reads only the files whose
stamp (mtime, size, ctime) changed and parses only those whose digest changed too; the first one
takes what it can from the persisted index instead. `refresh_paths()` re-reads just the files
whose change is known, without a walk. Editor buffers always win over the disk.

Parsing happens outside the lock, through the index's `extractor` (a `FileExtractor` is given
every stale file of a refresh at once, as paths).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from agent_lsp.symbols.disk import Indexed, index_disk_file
from agent_lsp.symbols.entries import DiskJob, FileExtractor, IndexedFile, Stale
from agent_lsp.symbols.model import Language, language_for
from agent_lsp.symbols.persist import Persisted
from agent_lsp.symbols.walk import Walker, own_link


class Refreshing(Persisted):
    def build(self) -> int:
        """Index everything from scratch (editor buffers are kept); returns the file count."""
        with self._refresh_lock:
            with self._lock:
                for key in [k for k, f in self._files.items() if f.buffer is None]:
                    self._drop(key)
            self._refresh()
            self._save()
        return len(self._files)

    def refresh(self) -> int:
        """Parse new files and files whose mtime or size changed, forget deleted ones (editor
        buffers are left alone); returns how many files changed. The first call builds."""
        with self._refresh_lock:
            first = not self._built
            changed = self._refresh()
            if first:
                self._save()
            return changed

    def refresh_paths(self, paths: Iterable[Path | str]) -> int:
        """Index again just these files, whose change is known (the editor saved them, a file
        watcher or the agent reported them): a stat of each, and a read only of those whose
        stamp changed; a file gone is forgotten. Nothing else is walked or read, so a later
        `refresh()` finds them current. Editor buffers win as in `refresh()`; before the first
        refresh this does nothing (it indexes everything). Returns how many files changed."""
        with self._refresh_lock:
            if not self._built:
                return 0
            stale: list[Stale] = []
            changed = 0
            for path in paths:
                key = self.key(path)
                if key is None or language_for(key) is None or not self._walked(key):
                    continue
                current = self._files.get(key)
                if current is not None and current.buffer is not None:
                    continue
                link = (self.root / key).is_symlink()
                try:
                    info = (self.root / key).stat()
                except OSError:
                    info = None
                if link and not own_link(os.path.realpath(self.root), str(self.root / key)):
                    info = None  # a link leading out: not indexed (forgotten if it was)
                if (
                    info is None
                    or not stat.S_ISREG(info.st_mode)
                    or (info.st_size > self.max_file_bytes)
                ):
                    with self._lock:
                        if (now := self._files.get(key)) is not None and now.buffer is None:
                            self._drop(key)
                            changed += 1
                    continue
                found = (info.st_mtime_ns, info.st_size, info.st_ctime_ns)
                if current is None:
                    if not self.truncated:
                        stale.append((key, *found, None, None))
                elif (current.mtime_ns, current.size, current.ctime_ns) != found:
                    stale.append((key, *found, current.digest or None, current.symbols))
            return changed + self._load_disk(stale)

    def _walked(self, key: str) -> bool:
        """Whether the walk of `refresh()` would reach `key` (no skipped directory on the way)."""
        folders = key.split("/")[:-1]
        if any(name in self.skip_dirs or name.startswith(".") for name in folders):
            return False
        return not any(
            (self.root.joinpath(*folders[: n + 1]) / "pyvenv.cfg").exists()
            for n in range(len(folders))
        )

    def _refresh(self) -> int:
        found = self._scan()
        with self._lock:
            known = dict(self._files)
        cached, names = self._load_cache()
        stale: list[Stale] = []
        reused: list[IndexedFile] = []
        for key, (mtime_ns, size, ctime_ns) in found.items():
            if (old := known.get(key)) is not None:
                if old.buffer is None and (old.mtime_ns, old.size, old.ctime_ns) != (
                    mtime_ns,
                    size,
                    ctime_ns,
                ):
                    stale.append((key, mtime_ns, size, ctime_ns, old.digest or None, old.symbols))
            elif (hit := cached.get(key)) is None:
                stale.append((key, mtime_ns, size, ctime_ns, None, None))
            elif hit[0] == (mtime_ns, ctime_ns, size):
                reused.append(IndexedFile(key, mtime_ns, size, hit[2], None, ctime_ns, hit[1]))
            else:
                stale.append((key, mtime_ns, size, ctime_ns, hit[1], hit[2]))
        with self._lock:
            changed = self._put_new(reused, cached, names)
        self.reused += changed
        # a warm start that found the disk as saved has nothing to save
        clean = bool(cached) and not stale and len(reused) == len(cached) == changed
        changed += self._load_disk(stale)
        for key, old in known.items():
            if key not in found and old.buffer is None:
                with self._lock:
                    if (current := self._files.get(key)) is not None and current.buffer is None:
                        self._drop(key)
                        changed += 1
        self._built = True
        if clean and changed == len(reused):
            self._saved = self._generation
        return changed

    def _scan(self) -> dict[str, tuple[int, int, int]]:
        """Indexable files under the root: relative path -> (mtime_ns, size, ctime_ns)."""
        walker = self._walker
        if walker is None or (walker.skip_dirs, walker.max_bytes, walker.max_files) != (
            self.skip_dirs,
            self.max_file_bytes,
            self.max_files,
        ):
            walker = self._walker = Walker(
                str(self.root), self.skip_dirs, self.max_file_bytes, self.max_files
            )
        found = walker.scan()
        self.truncated = walker.truncated
        return found

    def _load_disk(self, stale: Sequence[Stale]) -> int:
        """Index the disk's text of the stale files; returns how many changed in the index (a
        file whose digest is the one given keeps its symbols, and counts only if it is new)."""
        todo: list[tuple[Stale, Language]] = [
            (item, language) for item in stale if (language := language_for(item[0])) is not None
        ]
        changed = 0
        for position, result in self._extract_disk(todo):
            if result is None:
                continue  # unreadable
            (key, mtime_ns, size, ctime_ns, _, basis), _ = todo[position]
            symbols, found = result
            if symbols is None:
                assert basis is not None  # the digest matched the one given with the basis
                symbols = basis
                self.reused += 1
            else:
                self.parsed += 1
            entry = IndexedFile(key, mtime_ns, size, symbols, None, ctime_ns, found)
            with self._lock:
                current = self._files.get(key)
                if current is not None and current.buffer is not None:
                    continue  # the editor's text arrived meanwhile and wins
                if current is not None and current.symbols is symbols:
                    self._files[key] = entry  # same content, new stamp
                    self._saved = -1
                    continue
                self._put(key, entry)
            changed += 1
        return changed

    def _extract_disk(
        self, todo: Sequence[tuple[Stale, Language]]
    ) -> Iterator[tuple[int, Indexed | None]]:
        extractor = self.extractor
        if isinstance(extractor, FileExtractor):
            files: list[DiskJob] = [
                (self.root / item[0], language, item[2], item[4]) for item, language in todo
            ]
            yield from extractor.index_files(files, self.engine)
            return
        for position, (item, language) in enumerate(todo):
            path = self.root / item[0]
            yield position, index_disk_file(path, language, self.engine, item[4], extractor)
