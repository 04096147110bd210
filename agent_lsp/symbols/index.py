"""`SymbolIndex`: the definitions and identifier counts of every source file under a root.

Built by walking the tree (vendored, virtualenv, VCS, cache and build directories skipped; big
files skipped), kept per file with the stamp it was parsed at (mtime, ctime, size) and the digest
of its bytes. `refresh()` reads only files whose stamp changed, and parses only those whose digest
changed too; `update_file()` takes an editor buffer's text, which then wins
over the disk until `close_file()`. Parsing happens outside the lock, so a build in a worker
thread never blocks readers for long; every query works on immutable per-file snapshots.

Parsing is done by the index's `extractor`: plain `extract` in the calling thread by default, or
one that parses elsewhere (`worker.ProcessExtractor`, in a child process, so that big files do not
hold this process's GIL). An extractor that also has `extract_files` is given the changed files of
a refresh all at once (paths, not texts), to read, batch and order them as it likes.

With `cache` (a path, see `cache.cache_path`), the first refresh takes every file whose stamp (or,
failing that, digest) matches the persisted index from it instead of parsing it; the index is
saved after that first refresh and by `close()`. `parsed` and `reused` count the files parsed
from the disk and the ones taken without parsing.
"""

from __future__ import annotations

import difflib
import os
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from agent_lsp.fileio import read_disk_text
from agent_lsp.symbols import cache as persisted
from agent_lsp.symbols.disk import Indexed, index_disk_file
from agent_lsp.symbols.extract import describe_engines, extract
from agent_lsp.symbols.lexical import reference_lines
from agent_lsp.symbols.model import Definition, Engine, FileSymbols, Language, language_for
from agent_lsp.symbols.walk import Walker

DEFAULT_SKIP_DIRS = frozenset(
    {
        "node_modules",
        "venv",
        "__pycache__",
        "build",
        "dist",
        "site-packages",
        "vendor",
        "target",
    }
)  # and every directory whose name starts with "." (.git, .venv, .tox, caches) or that holds
# a pyvenv.cfg (a virtualenv under any name)
DEFAULT_MAX_FILE_BYTES = 1_000_000
DEFAULT_MAX_FILES = 50_000
REFERENCE_TEXT_MAX = 200

Extractor = Callable[[str, Language, Engine], FileSymbols]  # `extract(text, language, engine)`


DiskJob = tuple[Path, Language, int, bytes | None]  # path, language, size, expected digest
# key, mtime_ns, size, ctime_ns, the digest and symbols indexed so far (or None)
_Stale = tuple[str, int, int, int, bytes | None, FileSymbols | None]


@runtime_checkable
class FileExtractor(Protocol):
    """An extractor that also reads files itself: `index_files` yields, for every one of the
    (path, language, size in bytes, expected digest), its position and what
    `disk.index_disk_file` gives (None when it cannot be read), in any order."""

    def __call__(self, text: str, language: Language, engine: Engine, /) -> FileSymbols: ...

    def index_files(
        self, files: Sequence[DiskJob], engine: Engine, /
    ) -> Iterator[tuple[int, Indexed | None]]: ...


def _forget(table: dict[str, tuple[str, ...]], key: str, definitions: Iterable[Definition]) -> None:
    """Take `key` off the names of `definitions` in the name table."""
    for definition in definitions:
        keys = table.get(definition.name, ())
        if key in keys:
            rest = tuple(k for k in keys if k != key)
            if rest:
                table[definition.name] = rest
            else:
                del table[definition.name]


def _names_of(files: Iterable[IndexedFile]) -> dict[str, tuple[str, ...]]:
    return persisted.names_of({f.path: ((-1, -1, -1), b"", f.symbols) for f in files})


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """One file as indexed; `buffer` is the editor's text when it came from `update_file`."""

    path: str  # relative to the root, POSIX separators
    mtime_ns: int
    size: int
    symbols: FileSymbols
    buffer: str | None = None
    ctime_ns: int = -1
    digest: bytes = b""  # of the disk's bytes parsed (empty for a buffer)


@dataclass(frozen=True, slots=True)
class SymbolHit:
    path: str
    definition: Definition


@dataclass(frozen=True, slots=True)
class Reference:
    path: str
    line: int
    text: str


class SymbolIndex:
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

    # ------------------------------------------------------------------ building

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
            stale: list[_Stale] = []
            changed = 0
            for path in paths:
                key = self.key(path)
                if key is None or language_for(key) is None or not self._walked(key):
                    continue
                current = self._files.get(key)
                if current is not None and current.buffer is not None:
                    continue
                try:
                    info = (self.root / key).stat()
                except OSError:
                    info = None
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
        cached: persisted.Entries = {}
        names = b""
        if not self._built and self.cache is not None:
            cached, names = persisted.load_index(self.cache, self.engine, self.root)
        stale: list[_Stale] = []
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

    def _load_disk(self, stale: Sequence[_Stale]) -> int:
        """Index the disk's text of the stale files; returns how many changed in the index (a
        file whose digest is the one given keeps its symbols, and counts only if it is new)."""
        todo: list[tuple[_Stale, Language]] = [
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
        self, todo: Sequence[tuple[_Stale, Language]]
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
                        _forget(names, key, f.symbols.definitions)
        if persisted.save(self.cache, self.root, entries, self.engine, names=names):
            self._saved = generation

    # ------------------------------------------------------------------ editor buffers

    def update_file(self, path: Path | str, text: str) -> bool:
        """Index the editor's text of `path` (it wins over the disk until `close_file`);
        False when the file is not indexable (outside the root, unknown language, too big)."""
        key = self.key(path)
        language = language_for(key) if key else None
        if key is None or language is None:
            return False
        if len(text) > self.max_file_bytes:
            self.close_file(path)
            return False
        current = self._files.get(key)
        if current is not None and current.buffer == text:
            return True
        entry = IndexedFile(key, -1, len(text), self.extractor(text, language, self.engine), text)
        with self._lock:
            self._put(key, entry)
        return True

    def close_file(self, path: Path | str) -> None:
        """The editor closed `path`: index the disk's text again (or forget a deleted file)."""
        key = self.key(path)
        if key is None:
            return
        with self._lock:
            current = self._files.get(key)
            if current is None or current.buffer is None:
                return
            self._drop(key)
        try:
            info = (self.root / key).stat()
        except OSError:
            return
        if stat.S_ISREG(info.st_mode) and info.st_size <= self.max_file_bytes:
            self._load_disk([(key, info.st_mtime_ns, info.st_size, info.st_ctime_ns, None, None)])

    def sync_buffers(self, buffers: Mapping[Path, str]) -> int:
        """Make the index match the open buffers: index changed ones, release closed ones."""
        changed = 0
        open_keys: set[str] = set()
        for path, text in buffers.items():
            key = self.key(path)
            if key is None:
                continue
            open_keys.add(key)
            current = self._files.get(key)
            if (current is None or current.buffer != text) and self.update_file(key, text):
                changed += 1
        with self._lock:
            buffered = [k for k, f in self._files.items() if f.buffer is not None]
        for key in buffered:
            if key not in open_keys:
                self.close_file(key)
                changed += 1
        return changed

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
        for definition in entry.symbols.definitions:
            keys = by_name.get(definition.name, ())
            if key not in keys:
                by_name[definition.name] = (*keys, key)
        self._generation += 1

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
                _forget(table, key, cached[key][2].definitions)
        else:
            table = _names_of(fresh)
        by_name = self._names()
        if not by_name:
            self._by_name = table
        else:
            for name, keys in table.items():
                by_name[name] = (*by_name.get(name, ()), *keys)
        return len(fresh)

    def _names(self) -> dict[str, tuple[str, ...]]:
        """The name table (locked), unpacked first if a warm start left it packed: it is
        then the table of exactly the files indexed (any change unpacks it first)."""
        packed = self._packed_names
        if packed is not None:
            self._packed_names = None
            table = persisted.unpack_names(packed)
            self._by_name = _names_of(list(self._files.values())) if table is None else table
        return self._by_name

    def _drop(self, key: str) -> None:
        old = self._files.pop(key, None)
        if old is None:
            return
        _forget(self._names(), key, old.symbols.definitions)
        self._generation += 1

    # ------------------------------------------------------------------ queries

    def files(self) -> list[IndexedFile]:
        """A snapshot of every indexed file, by path."""
        with self._lock:
            return sorted(self._files.values(), key=lambda f: f.path)

    def file(self, path: Path | str) -> IndexedFile | None:
        key = self.key(path)
        return None if key is None else self._files.get(key)

    def definitions(self, name: str) -> list[SymbolHit]:
        """Definitions of `name`; `Container.name` keeps those inside that class or type."""
        container, _, bare = name.rpartition(".")
        with self._lock:
            found = (self._files.get(k) for k in self._names().get(bare, ()))
            entries = [entry for entry in found if entry is not None]
        hits = [
            SymbolHit(entry.path, d)
            for entry in entries
            for d in entry.symbols.definitions
            if d.name == bare and (not container or d.container == container)
        ]
        return sorted(hits, key=lambda h: (h.path, h.definition.line))

    def occurrences(self, name: str) -> dict[str, int]:
        """Per file, how often `name` occurs as an identifier (definitions included)."""
        bare = name.rpartition(".")[2]
        with self._lock:
            entries = list(self._files.values())
        found = [(e.path, e.symbols.identifiers.get(bare, 0)) for e in entries]
        return dict(sorted(item for item in found if item[1]))

    def references(
        self, name: str, limit: int = 50, *, skip_definitions: bool = True
    ) -> list[Reference]:
        """Lines where `name` occurs as an identifier (by path, then line), read from the
        editor's text or the disk now; definition lines of `name` are left out by default."""
        bare = name.rpartition(".")[2]
        with self._lock:
            entries = sorted(
                (e for e in self._files.values() if bare in e.symbols.identifiers),
                key=lambda e: e.path,
            )
        skip = (
            {(h.path, h.definition.line) for h in self.definitions(bare)}
            if skip_definitions
            else set[tuple[str, int]]()
        )
        found: list[Reference] = []
        for entry in entries:
            text = entry.buffer
            if text is None:
                try:
                    text = read_disk_text(self.root / entry.path)
                except OSError:
                    continue
            lines = text.split("\n")
            for line in reference_lines(text, entry.symbols.language, bare):
                if (entry.path, line) in skip:
                    continue
                text_at = lines[line - 1].strip()[:REFERENCE_TEXT_MAX]
                found.append(Reference(entry.path, line, text_at))
                if len(found) >= limit:
                    return found
        return found

    def totals(self) -> Counter[str]:
        """Identifier occurrences summed over all files (cached until the index changes)."""
        cached = self._totals
        if cached is not None and cached[0] == self._generation:
            return cached[1]
        generation = self._generation
        totals: Counter[str] = Counter()
        for entry in self.files():
            totals.update(entry.symbols.identifiers)
        self._totals = (generation, totals)
        return totals

    def names_like(self, name: str, limit: int = 5) -> list[str]:
        """Defined names close to `name`, ignoring case (for "did you mean")."""
        bare = name.rpartition(".")[2]
        with self._lock:
            names = list(self._names())
        folded: dict[str, list[str]] = {}
        for candidate in sorted(names):
            folded.setdefault(candidate.casefold(), []).append(candidate)
        close = difflib.get_close_matches(bare.casefold(), folded, n=limit, cutoff=0.75)
        found = [n for key in close for n in folded[key] if n != bare]
        return found[:limit]
