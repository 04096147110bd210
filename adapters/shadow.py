"""A private copy of a project with the editor's unsaved buffers overlaid."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from stat import S_ISREG
from typing import ClassVar

from adapters.shadowplan import (
    DEST_ONLY,
    DIR,
    FILE,
    MODULES,
    NONE,
    PLAIN,
    Entry,
    Plan,
    is_venv,
    relative,
    remove,
    starts,
)
from adapters.shadowwatch import ChangeFeed

__all__ = ["ShadowWorkspace"]

# Creating files costs mostly syscall latency: a few threads copy ~1.6x faster on 2 cores.
_COPY_THREADS = 4
_PARALLEL_FROM = 64


class ShadowWorkspace:
    """A copy of a project with the editor's unsaved buffers overlaid, so tests see exactly the
    text the user sees without writing the user's files.

    Ordinary files are copied (never hard-linked). Installed dependencies are shared instead
    of copied, so the shadow can run the tests: a virtualenv (``.venv``, ``venv`` or any
    folder with a ``pyvenv.cfg``) becomes one symlink to the user's; a ``node_modules`` folder
    becomes a real folder of symlinks, one per package (and ``.bin``), so tools that write
    caches into ``node_modules`` (``.vite``, ``.vite-temp``, ``.cache``) write into the
    shadow. Residual risk: a test that writes *inside* a package folder or a virtualenv (``pip
    install``, patching a dependency's files) reaches the user's copy; overlays never write
    through these links."""

    SKIP_DIRS: ClassVar[frozenset[str]] = frozenset(
        {".git", ".agent-lsp", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache"}
        | {".mypy_cache", ".ruff_cache", ".tox", ".hg", ".svn"}
    )
    VENV_DIRS: ClassVar[frozenset[str]] = frozenset({".venv", "venv"})
    # cache folders tools create inside node_modules: left out, so they are made in the shadow
    # (vite bundles a `vite.config.ts` into `.vite-temp` and leaves the folder behind)
    NODE_CACHE_DIRS: ClassVar[frozenset[str]] = frozenset(
        {".cache", ".vite", ".vitest", ".vite-temp"}
    )
    # what tests leave in ``dest`` that the next sync keeps (nothing of the source's)
    CACHE_DIRS: ClassVar[frozenset[str]] = SKIP_DIRS | NODE_CACHE_DIRS

    def __init__(
        self,
        source: Path,
        dest: Path,
        skip: Callable[[str], bool] | None = None,
        *,
        watch: bool = True,
        max_watches: int | None = None,
    ) -> None:
        """`skip(rel)`: files and folders never copied (the caller's secret files). `watch`:
        refresh from a change feed (inotify) where there is one; `max_watches`: at most that
        many watches (default: a quarter of the user's limit), else a full walk each time."""
        self.skip = skip
        self.source = source.absolute()
        self.dest = dest.absolute()
        real_source, real_dest = self.source.resolve(), self.dest.resolve()
        if real_source == real_dest or real_source.is_relative_to(real_dest):
            raise ValueError(f"shadow {dest} must not contain the project {source}")
        nested = real_dest.is_relative_to(real_source)
        self._dest_rel = real_dest.relative_to(real_source).as_posix() if nested else None
        self._src, self._dst = f"{self.source}/", f"{self.dest}/"
        self._skipped: dict[str, dict[str, bool]] = {}  # folder -> name -> skip(rel), cached
        self.feed = ChangeFeed(self._src, self._dst, watch=watch, max_watches=max_watches)
        self._overlaid: set[str] = set()  # the overlays the last sync wrote
        self.last_checked = 0  # how many folders the last sync compared

    def note_changed(self, rels: Iterable[str]) -> None:
        """Files someone saw change (the editor's saves and file events): re-checked and copied
        again at the next sync, even when their size and mtime look the same."""
        for rel in rels:
            with contextlib.suppress(ValueError):
                self.feed.note(relative(rel))

    def close(self) -> None:
        self.feed.stop()

    def sync(self, overlays: Mapping[str, str]) -> Path:
        """Bring ``dest`` up to date with the source plus ``overlays`` (relative path -> text).

        The source and ``dest`` side by side, folder by folder: a copied file whose size or
        mtime differ from the source's (the source changed, or the last test run wrote it:
        copies keep the source's mtime), or that the change feed reported changed in the
        source, is copied again; what ``dest`` has that the source has not is deleted
        (hermetic runs), except caches (``__pycache__``, ``.pytest_cache``…) and overlays
        (rewritten anyway). A folder the tests swapped for a symlink is removed, never written
        or deleted through. Which folders: all of them (a full walk: the first sync, now and
        then, or without a change feed), else only those the feed reported (`ChangeFeed`)."""
        wanted = {relative(key): text for key, text in overlays.items()}
        for rel in self._overlaid - wanted.keys():  # a closed buffer: the file's own text again
            self.feed.note(rel)
        self.dest.mkdir(parents=True, exist_ok=True)
        plan = Plan(wanted, self.feed.take())
        if plan.changes.full:
            stack = [("", PLAIN, True)]
        else:
            stack = [
                (folder, mode, False)
                for folder, mode in starts(self._src, self._dst, plan, self.feed.mode_of).items()
            ]
        while stack:
            folder, mode, whole = stack.pop()
            self._sync_folder(folder, mode, plan, stack, whole)
        pending = plan.pending
        if len(pending) < _PARALLEL_FROM:
            done = [self._try_materialize(rel, entry) for rel, entry in pending]
        else:
            with ThreadPoolExecutor(_COPY_THREADS) as pool:
                done = list(pool.map(self._try_materialize, *zip(*pending, strict=True)))
        for (rel, _entry), copied in zip(pending, done, strict=True):
            if not copied:  # vanished or unreadable: tried again on the next sync
                self.feed.note(rel)
        written = plan.written
        written.update(rel for rel, _entry in pending)
        for rel, text in wanted.items():
            self._write_overlay(rel, text)
            parts = rel.split("/")
            written.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
        self.feed.settle(written)
        self._overlaid = set(wanted)
        self.last_checked = plan.checked
        return self.dest

    def _sync_folder(
        self, folder: str, mode: int, plan: Plan, stack: list[tuple[str, int, bool]], whole: bool
    ) -> None:
        """Compare one folder (``""`` or ``"a/b/"``) of the source with ``dest``'s: fix folders
        and stray entries at once, queue copies and links in ``plan``, push subfolders (all of
        them if `whole`, else the new ones and those the feed says to walk)."""
        self.feed.watch(folder, mode, dest_only=mode == DEST_ONLY)
        plan.checked += 1
        files, links, dirs = self._list_source(folder, mode)
        over, keep = plan.files.get(folder, NONE), plan.dirs.get(folder, NONE)
        recopy = plan.changes.recopy.get(folder, NONE)
        recurse = plan.changes.recurse.get(folder, NONE)
        done: set[str] = set()
        try:
            scanner = os.scandir(self._dst + folder)
        except OSError:
            scanner = None
        if scanner is not None:
            with scanner:
                for item in scanner:
                    name = item.name
                    try:
                        if name in files:
                            if name not in over and name not in recopy:
                                info = item.stat(follow_symlinks=False)
                                if S_ISREG(info.st_mode) and files[name] == (
                                    info.st_size,
                                    info.st_mtime_ns,
                                ):
                                    done.add(name)
                        elif name in dirs:
                            if item.is_dir(follow_symlinks=False):
                                done.add(name)
                            else:  # swapped for a link or a file: removed, never followed
                                remove(Path(item.path))
                                plan.written.add(folder + name)
                        elif name in links:
                            if item.is_symlink() and str(
                                Path(item.path).readlink()
                            ) == self._link_of(links[name]):
                                done.add(name)
                        elif name in keep:
                            if item.is_dir(follow_symlinks=False) and (whole or name in recurse):
                                stack.append((f"{folder}{name}/", DEST_ONLY, True))
                        elif name not in over and name not in self.CACHE_DIRS:
                            remove(Path(item.path))  # written by a test run, or gone
                            plan.written.add(folder + name)
                    except OSError:
                        continue
        pending = plan.pending
        for name in files.keys() - done - over:
            pending.append((folder + name, FILE))
        for name in links.keys() - done - over:
            pending.append((folder + name, links[name]))
        for name, child_mode in dirs.items():
            fresh = name not in done
            if fresh:
                with contextlib.suppress(OSError):
                    self._materialize(folder + name, DIR)
                plan.written.add(folder + name)
            if whole or fresh or name in recurse:
                stack.append((f"{folder}{name}/", child_mode, True))

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

    def _list_source(
        self, folder: str, mode: int
    ) -> tuple[dict[str, tuple[int, int]], dict[str, Entry], dict[str, int]]:
        """One source folder: files (name -> size, mtime), links and shared folders (name ->
        the link ``dest`` must hold), subfolders to copy (name -> how to list them)."""
        files: dict[str, tuple[int, int]] = {}
        links: dict[str, Entry] = {}
        dirs: dict[str, int] = {}
        if mode == DEST_ONLY:
            return files, links, dirs
        try:
            scanner = os.scandir(self._src + folder)
        except OSError:
            return files, links, dirs
        skip, hidden = self.skip, self._skipped.setdefault(folder, {})
        with scanner:
            for item in scanner:
                name = item.name
                if mode == MODULES:  # one shared link per package, caches left out
                    if name not in self.NODE_CACHE_DIRS:
                        links[name] = Entry("share", target=item.path)
                    continue
                if skip is not None:
                    secret = hidden.get(name)
                    if secret is None:
                        secret = hidden[name] = skip(folder + name)
                    if secret:
                        continue
                try:
                    if item.is_symlink():
                        links[name] = Entry("link", target=str(Path(item.path).readlink()))
                    elif item.is_dir(follow_symlinks=False):
                        if folder + name == self._dest_rel:
                            continue
                        if name == "node_modules":
                            dirs[name] = MODULES
                        elif name in self.VENV_DIRS or is_venv(item.path):
                            links[name] = Entry("share", target=item.path)
                        elif name not in self.SKIP_DIRS:
                            dirs[name] = PLAIN
                    else:
                        info = item.stat(follow_symlinks=False)
                        if S_ISREG(info.st_mode):
                            files[name] = (info.st_size, info.st_mtime_ns)
                except OSError:
                    continue
        return files, links, dirs

    def _link_of(self, entry: Entry) -> str:
        """The target of the link ``dest`` holds for a link or shared folder of the source."""
        return entry.target if entry.kind == "share" else self._link_target(entry.target)

    def _try_materialize(self, rel: str, entry: Entry) -> bool:
        try:
            self._materialize(rel, entry)
        except OSError:
            return False  # vanished or unreadable: retried on the next sync
        return True

    def _materialize(self, rel: str, entry: Entry) -> None:
        target = Path(self._dst + rel)
        if entry.kind == "dir":
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                remove(target)
            target.mkdir(exist_ok=True)
            return
        remove(target)
        if entry.kind == "file":
            shutil.copy2(self._src + rel, target, follow_symlinks=False)
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
        remove(target)
        with target.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)
