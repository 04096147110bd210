"""The shadow copy's change feed: what changed in the project and in the shadow since the last
sync, so a refresh re-checks only those folders instead of walking the whole tree.

Sources: inotify watches on every folder the walk visits, on both sides (`adapters.inotify`),
and paths someone reports (`note`: the editor's saves and watched-file events, copies that
failed). A full walk stays the ground truth: the first sync, every `full_walk_every` seconds,
after an overflowed event queue, and for good once a watch cannot be added (the watch limit or
the budget) or where there is no inotify; paths noted meanwhile are copied again even then."""

from __future__ import annotations

import contextlib
import errno
import threading
import time
import weakref
from dataclasses import dataclass, field

from adapters import inotify
from adapters.inotify import Inotify

__all__ = ["ChangeFeed", "Changes"]

SOURCE, DEST = 0, 1
# in the project: every change of a file's bytes, mode or times; folders made, gone or moved
_SOURCE_MASK = (
    inotify.IN_MODIFY
    | inotify.IN_CLOSE_WRITE
    | inotify.IN_ATTRIB
    | inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
)
# in the shadow (written by test runs): what a size-and-mtime comparison can then find
_DEST_MASK = (
    inotify.IN_MODIFY
    | inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
)
_FLAGS = inotify.IN_ONLYDIR | inotify.IN_DONT_FOLLOW | inotify.IN_EXCL_UNLINK
_NEW_DIR = inotify.IN_CREATE | inotify.IN_MOVED_TO
_GONE_DIR = inotify.IN_DELETE | inotify.IN_MOVED_FROM


@dataclass
class Changes:
    """What one sync re-checks. `full`: walk everything; else `folders` (``""`` or ``"a/b/"``
    -> how the walk lists it). In both cases `recopy` (folder -> names) are copied again
    whatever their size and mtime, `recurse` (folder -> names) are walked whole."""

    full: bool = True
    folders: dict[str, int] = field(default_factory=dict[str, int])
    recopy: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    recurse: dict[str, set[str]] = field(default_factory=dict[str, set[str]])


class ChangeFeed:
    """Watches for one `ShadowWorkspace` (`source`, `dest`: absolute, ending in ``/``)."""

    def __init__(
        self,
        source: str,
        dest: str,
        *,
        watch: bool = True,
        max_watches: int | None = None,
        full_walk_every: float = 300.0,
    ) -> None:
        self._roots = (source, dest)
        self._every = full_walk_every
        self._budget = _default_budget() if max_watches is None else max_watches
        self._notify = Inotify.open() if watch else None
        if self._notify is not None:
            weakref.finalize(self, self._notify.close)
        self._wds: dict[int, tuple[int, str]] = {}  # watch -> side, folder
        self._paths: dict[tuple[int, str], int] = {}  # side, folder -> watch
        self._modes: dict[str, int] = {}  # folders walked -> how they are listed
        self._lock = threading.Lock()
        self._next = Changes()
        self._last_full = 0.0

    @property
    def watching(self) -> bool:
        return self._notify is not None

    def take(self) -> Changes:
        """What the next sync must re-check (and a fresh record for the one after)."""
        events = self._read()
        with self._lock:
            changes, self._next = self._next, Changes(full=False)
            for event in events:
                self._apply(changes, event)
            now = time.monotonic()
            if self._notify is None or now - self._last_full >= self._every:
                changes.full = True
            if changes.full:
                self._last_full = now
            return changes

    def settle(self, written: set[str]) -> None:
        """After a sync: the shadow's events of what it wrote or removed itself (`written`:
        relative paths; inside them too) are dropped, every other event is kept for the next."""
        events = self._read()
        with self._lock:
            for event in events:
                where = self._wds.get(event.wd)
                if where is not None and where[0] == DEST and event.name:  # noqa: SIM102
                    if _within(where[1] + event.name, written):
                        continue
                self._apply(self._next, event)

    def note(self, rel: str, *, recopy: bool = True) -> None:
        """`rel` (a relative POSIX path) changed: its folder is re-checked, the file copied again
        (`recopy`), a folder not walked yet walked whole."""
        with self._lock:
            self._mark(self._next, rel, recopy=recopy)

    def watch(self, folder: str, mode: int, *, dest_only: bool = False) -> None:
        """Called just before the walk lists `folder` on both sides: changes from now on are
        reported, the ones before are in the listing."""
        self._modes[folder] = mode
        if self._notify is None:
            return
        sides = (DEST,) if dest_only else (SOURCE, DEST)
        for side in sides:
            try:
                wd = self._notify.add(self._roots[side] + folder, _mask(side))
            except OSError as error:
                if error.errno in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone or swapped meanwhile: its parent's events say so
                self.stop()  # the watch limit: a full walk from now on
                return
            old = self._wds.get(wd)
            if old is not None and old != (side, folder):
                self._paths.pop(old, None)  # the same folder, moved
            self._wds[wd] = (side, folder)
            self._paths[(side, folder)] = wd
            if len(self._wds) > self._budget:
                self.stop()
                return

    def mode_of(self, folder: str) -> int:
        """How the walk listed `folder` (0, a plain folder, if it never did)."""
        return self._modes.get(folder, 0)

    def stop(self) -> None:
        """No more watching (each sync a full walk)."""
        if self._notify is not None:
            self._notify.close()
            self._notify = None
        self._wds.clear()
        self._paths.clear()

    def _read(self) -> list[inotify.Event]:
        if self._notify is None:
            return []
        try:
            return self._notify.read()
        except OSError:
            self.stop()
            return []

    def _apply(self, changes: Changes, event: inotify.Event) -> None:
        if event.mask & inotify.IN_Q_OVERFLOW:
            changes.full = True
            return
        where = self._wds.get(event.wd)
        if where is None:
            return
        side, folder = where
        if event.mask & inotify.IN_IGNORED:  # the folder is gone (its parent was told)
            del self._wds[event.wd]
            if self._paths.get(where) == event.wd:
                del self._paths[where]
            return
        if not event.name:
            return  # the folder itself (deleted or moved): its parent's event covers it
        changes.folders.setdefault(folder, self._modes.get(folder, 0))
        if event.mask & inotify.IN_ISDIR:
            if event.mask & _NEW_DIR:
                changes.recurse.setdefault(folder, set()).add(event.name)
            if event.mask & _GONE_DIR:
                self._forget(side, f"{folder}{event.name}/")
        elif side == SOURCE:
            changes.recopy.setdefault(folder, set()).add(event.name)

    def _forget(self, side: int, prefix: str) -> None:
        """Stop watching a folder moved away (its watches would report under its old path)."""
        for (watched_side, folder), wd in list(self._paths.items()):
            if watched_side == side and folder.startswith(prefix):
                del self._paths[(watched_side, folder)]
                self._wds.pop(wd, None)
                if self._notify is not None:
                    with contextlib.suppress(OSError):
                        self._notify.remove(wd)

    def _mark(self, changes: Changes, rel: str, *, recopy: bool) -> None:
        folder, _, name = rel.rpartition("/")
        folder = f"{folder}/" if folder else ""
        while folder not in self._modes:  # not walked yet: its nearest walked ancestor's
            if not folder:
                changes.full = True
                return
            parent, _, name = folder[:-1].rpartition("/")
            folder = f"{parent}/" if parent else ""
            recopy = False
        changes.folders.setdefault(folder, self._modes[folder])
        changes.recurse.setdefault(folder, set()).add(name)  # if it is a folder
        if recopy:
            changes.recopy.setdefault(folder, set()).add(name)


def _within(rel: str, written: set[str]) -> bool:
    if rel in written:
        return True
    parts = rel.split("/")
    return any("/".join(parts[:end]) in written for end in range(1, len(parts)))


def _mask(side: int) -> int:
    return (_SOURCE_MASK if side == SOURCE else _DEST_MASK) | _FLAGS


def _default_budget() -> int:
    """A quarter of the user's inotify watch limit: the editor's own watchers need theirs."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as handle:  # noqa: PTH123
            return max(int(handle.read()) // 4, 0)
    except (OSError, ValueError):
        return 8192
