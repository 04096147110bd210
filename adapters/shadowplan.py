"""The parts of a shadow sync (`adapters.shadow`): what an entry of the source becomes, one
sync's plan, and the path helpers."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from adapters.shadowwatch import Changes


class Entry(NamedTuple):
    kind: str  # "dir", "file", "link" (a symlink of the project) or "share" (see below)
    size: int = 0
    mtime_ns: int = 0
    target: str = ""


DIR, FILE = Entry("dir"), Entry("file")
PLAIN, MODULES, DEST_ONLY = 0, 1, 2  # how a folder is listed: copied, shared, dest only
NONE: frozenset[str] = frozenset()


class Plan:
    """One sync: the overlays by folder (``""`` or ``"a/b/"`` -> names), the folders that
    hold them, the copies and links still to make, what the change feed reported."""

    def __init__(self, wanted: Mapping[str, str], changes: Changes) -> None:
        self.files: dict[str, set[str]] = {}
        self.dirs: dict[str, set[str]] = {}
        self.pending: list[tuple[str, Entry]] = []
        self.changes = changes
        self.checked = 0  # folders compared
        self.written: set[str] = set()  # what the sync itself wrote or removed in ``dest``
        for rel in wanted:
            folder, _, name = rel.rpartition("/")
            self.files.setdefault(folder + "/" if folder else "", set()).add(name)
            while folder:
                parent, _, name = folder.rpartition("/")
                self.dirs.setdefault(parent + "/" if parent else "", set()).add(name)
                folder = parent


def is_venv(path: str) -> bool:
    return os.path.isfile(path + "/pyvenv.cfg")  # noqa: PTH113 (no Path object per folder)


def relative(key: str) -> str:
    path = PurePosixPath(key)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"overlay path must be relative and inside the project: {key!r}")
    return path.as_posix()


def remove(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()


def starts(src: str, dst: str, plan: Plan, mode_of: Callable[[str], int]) -> dict[str, int]:
    """The folders an incremental sync re-checks (-> how to list them). One gone, or a link
    now, on either side (`src`, `dst`: the roots, ending in ``/``) is left to the nearest
    folder above it that is a real folder on both sides, every folder above it too, which then
    walks it whole: never listed or written through a link a test made."""
    found: dict[str, int] = {}
    recurse = plan.changes.recurse
    for folder, mode in plan.changes.folders.items():
        top = _real_prefix(src, dst, folder)
        if top != folder:
            recurse.setdefault(top, set()).add(folder[len(top) :].split("/", 1)[0])
            mode = mode_of(top)
        found[top] = mode
    return found


def _real_prefix(src: str, dst: str, folder: str) -> str:
    top = ""
    for part in folder.split("/")[:-1]:
        for root in (src, dst):
            try:  # no trailing slash: that would follow a link
                if not stat.S_ISDIR(os.lstat(root + top + part).st_mode):
                    return top
            except OSError:
                return top
        top += part + "/"
    return top
