"""A private copy of a project with the editor's unsaved buffers overlaid."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import ClassVar, NamedTuple

__all__ = ["ShadowWorkspace"]

# Creating files costs mostly syscall latency: a few threads copy ~1.6x faster on 2 cores.
_COPY_THREADS = 4
_PARALLEL_FROM = 64


class _Entry(NamedTuple):
    kind: str  # "dir", "file", "link" (a symlink of the project) or "share" (see below)
    size: int = 0
    mtime_ns: int = 0
    target: str = ""


class ShadowWorkspace:
    """A copy of a project with the editor's unsaved buffers overlaid, so tests see exactly the
    text the user sees without writing the user's files.

    Ordinary files are copied (never hard-linked). Installed dependencies are shared instead
    of copied, so the shadow can run the tests: a virtualenv (``.venv``, ``venv`` or any
    folder with a ``pyvenv.cfg``) becomes one symlink to the user's; a ``node_modules`` folder
    becomes a real folder of symlinks, one per package (and ``.bin``), so tools that write
    caches into ``node_modules`` (``.vite``, ``.cache``) write into the shadow. Residual risk:
    a test that writes *inside* a package folder or a virtualenv (``pip install``, patching a
    dependency's files) reaches the user's copy; overlays never write through these links."""

    SKIP_DIRS: ClassVar[frozenset[str]] = frozenset(
        {".git", ".agent-lsp", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache"}
        | {".mypy_cache", ".ruff_cache", ".tox", ".hg", ".svn"}
    )
    VENV_DIRS: ClassVar[frozenset[str]] = frozenset({".venv", "venv"})
    # cache folders tools create inside node_modules: left out, so they are made in the shadow
    NODE_CACHE_DIRS: ClassVar[frozenset[str]] = frozenset({".cache", ".vite", ".vitest"})

    def __init__(self, source: Path, dest: Path, skip: Callable[[str], bool] | None = None) -> None:
        """`skip(rel)`: files and folders never copied (the caller's secret files)."""
        self.skip = skip
        self.source = source.absolute()
        self.dest = dest.absolute()
        real_source, real_dest = self.source.resolve(), self.dest.resolve()
        if real_source == real_dest or real_source.is_relative_to(real_dest):
            raise ValueError(f"shadow {dest} must not contain the project {source}")
        nested = real_dest.is_relative_to(real_source)
        self._dest_rel = real_dest.relative_to(real_source).as_posix() if nested else None
        self._synced: dict[str, _Entry] = {}
        self._overlaid: set[str] = set()

    def sync(self, overlays: Mapping[str, str]) -> Path:
        """Bring ``dest`` up to date with the source plus ``overlays`` (relative path -> text)."""
        wanted = {_relative(key): text for key, text in overlays.items()}
        self.dest.mkdir(parents=True, exist_ok=True)
        self._check_folders()
        self._reset_drift()
        current = self._scan()
        self._remove_stale(current, wanted)
        synced: dict[str, _Entry] = {}
        pending: list[tuple[str, _Entry]] = []
        for rel, entry in sorted(current.items()):
            unchanged = self._synced.get(rel) == entry and rel not in self._overlaid
            if rel in wanted or unchanged:
                synced[rel] = entry
            elif entry.kind != "dir":
                pending.append((rel, entry))  # folders first, then files in parallel
            elif self._try_materialize(rel, entry):
                synced[rel] = entry
        if len(pending) < _PARALLEL_FROM:
            done = [self._try_materialize(rel, entry) for rel, entry in pending]
        else:
            with ThreadPoolExecutor(_COPY_THREADS) as pool:
                done = list(pool.map(self._try_materialize, *zip(*pending, strict=True)))
        synced.update(item for item, ok in zip(pending, done, strict=True) if ok)
        for rel, text in wanted.items():
            self._write_overlay(rel, text)
        self._synced, self._overlaid = synced, set(wanted)
        return self.dest

    def _check_folders(self) -> None:
        """The tests ran in ``dest`` and may have swapped a folder for a symlink (to ``.git``
        of the project, say): never write or delete through one. Each such folder is removed
        and forgotten, so this sync makes it again."""
        broken: list[str] = []
        for rel, entry in sorted(self._synced.items(), key=lambda item: item[0].count("/")):
            if entry.kind != "dir" or any(rel.startswith(b + "/") for b in broken):
                continue
            try:
                info = (self.dest / rel).lstat()
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(info.st_mode):
                (self.dest / rel).unlink()
                broken.append(rel)
        if broken:
            self._synced = {
                rel: entry
                for rel, entry in self._synced.items()
                if not any(rel == b or rel.startswith(b + "/") for b in broken)
            }

    def _reset_drift(self) -> None:
        """Hermetic runs: what the last run wrote in ``dest`` is undone before the next one.
        A file it added is deleted; a copied file it changed (size or mtime differ from the
        source's, which the copy kept) is forgotten, so this sync copies it again. Caches
        (``__pycache__``, ``.pytest_cache``…) and overlays (rewritten anyway) are left."""
        known, keep = self._synced, set(self._overlaid)
        keep |= {p.as_posix() for rel in self._overlaid for p in PurePosixPath(rel).parents}
        caches = self.SKIP_DIRS | self.NODE_CACHE_DIRS
        pending = [""]
        while pending:
            folder = pending.pop()
            try:
                scanner = os.scandir(self.dest / folder)
            except OSError:
                continue
            with scanner:
                for item in scanner:
                    rel = f"{folder}/{item.name}" if folder else item.name
                    entry = known.get(rel)
                    if entry is None:
                        if rel not in keep and item.name not in caches:
                            with contextlib.suppress(OSError):
                                _remove(Path(item.path))
                        elif rel in keep and item.is_dir(follow_symlinks=False):
                            pending.append(rel)
                    elif entry.kind == "dir":
                        if item.is_dir(follow_symlinks=False):
                            pending.append(rel)
                    elif entry.kind == "file" and rel not in keep:
                        try:
                            info = item.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        if (info.st_size, info.st_mtime_ns) != (entry.size, entry.mtime_ns):
                            del known[rel]

    def to_source(self, shadow_path: Path | str) -> Path:
        """Map a path inside ``dest`` (absolute or relative) to the same path in the source.

        Absolute paths outside ``dest`` are returned unchanged."""
        path = Path(shadow_path)
        if not path.is_absolute():
            return self.source / path
        for base in (self.dest, self.dest.resolve()):
            if path.is_relative_to(base):
                return self.source / path.relative_to(base)
        return path

    def _scan(self) -> dict[str, _Entry]:
        entries: dict[str, _Entry] = {}
        pending = [""]
        while pending:
            folder = pending.pop()
            try:
                scanner = os.scandir(self.source / folder)
            except OSError:
                continue
            with scanner:
                for item in scanner:
                    rel = f"{folder}/{item.name}" if folder else item.name
                    if self.skip is not None and self.skip(rel):
                        continue
                    with contextlib.suppress(OSError):
                        info = item.stat(follow_symlinks=False)
                        if stat.S_ISLNK(info.st_mode):
                            entries[rel] = _Entry("link", target=str(Path(item.path).readlink()))
                        elif stat.S_ISDIR(info.st_mode):
                            if rel == self._dest_rel:
                                continue
                            if item.name == "node_modules":
                                entries[rel] = _Entry("dir")
                                self._share_children(rel, entries)
                            elif item.name in self.VENV_DIRS or _is_venv(item.path):
                                entries[rel] = _Entry("share", target=item.path)
                            elif item.name not in self.SKIP_DIRS:
                                entries[rel] = _Entry("dir")
                                pending.append(rel)
                        elif stat.S_ISREG(info.st_mode):
                            entries[rel] = _Entry("file", info.st_size, info.st_mtime_ns)
        return entries

    def _share_children(self, rel: str, entries: dict[str, _Entry]) -> None:
        """One "share" entry per package of a node_modules folder (its caches left out)."""
        try:
            children = list(os.scandir(self.source / rel))
        except OSError:
            return
        for child in children:
            if child.name not in self.NODE_CACHE_DIRS:
                entries[f"{rel}/{child.name}"] = _Entry("share", target=child.path)

    def _remove_stale(self, current: Mapping[str, _Entry], wanted: Mapping[str, str]) -> None:
        """Delete shadow paths whose source is gone (or changed kind) and dropped new overlays."""
        stale = {
            rel
            for rel, old in self._synced.items()
            if rel not in current or current[rel].kind != old.kind
        }
        stale |= {rel for rel in self._overlaid - wanted.keys() if rel not in current}
        removed: set[str] = set()
        for rel in sorted(stale):
            parents = PurePosixPath(rel).parents
            if any(parent.as_posix() in removed for parent in parents):
                continue
            _remove(self.dest / rel)
            removed.add(rel)
            self._prune_empty_parents(rel, current)

    def _prune_empty_parents(self, rel: str, current: Mapping[str, _Entry]) -> None:
        for parent in PurePosixPath(rel).parents:
            name = parent.as_posix()
            if name == "." or name in current:
                return
            try:
                (self.dest / name).rmdir()
            except OSError:
                return

    def _try_materialize(self, rel: str, entry: _Entry) -> bool:
        try:
            self._materialize(rel, entry)
        except OSError:
            return False  # vanished or unreadable: retried on the next sync
        return True

    def _materialize(self, rel: str, entry: _Entry) -> None:
        target = self.dest / rel
        if entry.kind == "dir":
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                _remove(target)
            target.mkdir(exist_ok=True)
            return
        _remove(target)
        if entry.kind == "file":
            shutil.copy2(self.source / rel, target, follow_symlinks=False)
        elif entry.kind == "share":
            target.symlink_to(entry.target, target_is_directory=Path(entry.target).is_dir())
        else:
            target.symlink_to(self._link_target(entry.target))

    def _link_target(self, link: str) -> str:
        """Absolute links into the project point into the shadow instead."""
        path = Path(link)
        if path.is_absolute() and path.is_relative_to(self.source):
            return str(self.dest / path.relative_to(self.source))
        return link

    def _write_overlay(self, rel: str, text: str) -> None:
        target = self.dest / rel
        existing = target.parent
        while existing != self.dest and not existing.exists():
            existing = existing.parent
        if not existing.resolve().is_relative_to(self.dest.resolve()):
            return  # reached through a symlink leaving the shadow: never write there
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove(target)
        with target.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)


def _is_venv(path: str) -> bool:
    return Path(path, "pyvenv.cfg").is_file()


def _relative(key: str) -> str:
    path = PurePosixPath(key)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"overlay path must be relative and inside the project: {key!r}")
    return path.as_posix()


def _remove(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()
