"""The walk of `SymbolIndex.refresh()`: every indexable file under a root, with its stamp.

A walk lists every directory and stats every candidate file. The listing of a directory is
kept with the directory's mtime and reused while that mtime stays (adding, removing or renaming
an entry changes it; rewriting a file in place does not, so files are still stat'ed every time).
A listing made within `RACY_NS` of the directory's mtime is not reused: a change in the same
clock tick would keep the mtime.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass

from agent_lsp.symbols.model import SUFFIXES

RACY_NS = 2_000_000_000

Stamp = tuple[int, int, int]  # mtime_ns, size, ctime_ns


def indexable(name: str) -> bool:
    """`model.language_for(name) is not None` for a file name, without building a path."""
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in SUFFIXES


@dataclass(frozen=True, slots=True)
class Listing:
    mtime_ns: int
    files: tuple[tuple[str, str], ...]  # (key, path) of the candidate files, by name
    subdirectories: tuple[tuple[str, str], ...]  # (path, key prefix), by name
    skipped: bool  # a virtualenv: nothing under it is indexed


class Walker:
    """Walks `root` (skipping `skip_dirs`, dot-directories, virtualenvs and links leading
    out), remembering each directory's listing; `listed` counts the directories listed (not
    reused) so far."""

    def __init__(self, root: str, skip_dirs: frozenset[str], max_bytes: int, max_files: int):
        self.root = root
        self.skip_dirs = skip_dirs
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.truncated = False
        self.listed = 0
        self._listings: dict[str, Listing] = {}
        self._real_root = os.path.realpath(root)

    def scan(self) -> dict[str, Stamp]:
        """Indexable files under the root: relative path -> (mtime_ns, size, ctime_ns)."""
        found: dict[str, Stamp] = {}
        self.truncated = False
        seen: dict[str, Listing] = {}
        pending = [(self.root, "")]
        stat_path = os.stat  # a str: no Path built per file
        max_bytes, max_files = self.max_bytes, self.max_files
        while pending:
            directory, prefix = pending.pop()
            listing = self._listing(directory, prefix)
            if listing is None:
                continue
            seen[directory] = listing
            if listing.skipped:
                continue
            for key, path in listing.files:
                try:
                    info = stat_path(path)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_size <= max_bytes:
                    if len(found) >= max_files:
                        self.truncated = True
                        self._listings = seen | self._listings
                        return found
                    found[key] = (info.st_mtime_ns, info.st_size, info.st_ctime_ns)
            pending.extend(reversed(listing.subdirectories))
        self._listings = seen  # directories gone are forgotten
        return found

    def _listing(self, directory: str, prefix: str) -> Listing | None:
        try:
            mtime_ns = os.stat(directory).st_mtime_ns  # noqa: PTH116 (a str: no Path to build)
        except OSError:
            return None
        known = self._listings.get(directory)
        if known is not None and known.mtime_ns == mtime_ns:
            return known
        before = time.time_ns()
        try:
            with os.scandir(directory) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError:
            return None
        self.listed += 1
        if prefix and any(e.name == "pyvenv.cfg" for e in entries):
            return Listing(mtime_ns, (), (), True)  # a virtualenv, whatever its name (and stays)
        files: list[tuple[str, str]] = []
        subdirectories: list[tuple[str, str]] = []
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in self.skip_dirs and not name.startswith("."):
                        subdirectories.append((entry.path, f"{prefix}{name}/"))
                    continue
            except OSError:
                continue
            if indexable(name) and self._own(entry):
                files.append((prefix + name, entry.path))
        trusted = mtime_ns < before - RACY_NS  # else a change in the same tick would keep it
        return Listing(mtime_ns if trusted else -1, tuple(files), tuple(subdirectories), False)

    def _own(self, entry: os.DirEntry[str]) -> bool:
        try:
            return not entry.is_symlink() or own_link(self._real_root, entry.path)
        except OSError:
            return False


def own_link(real_root: str, path: str) -> bool:
    """Whether the link at `path` may be indexed: it leads to an indexable file inside the
    root (`real_root`, links resolved). A link out of the project, or to a file of another
    kind (`.env`), is never read."""
    target = os.path.realpath(path)
    inside = os.path.commonpath((real_root, target)) == real_root
    return inside and indexable(target.rsplit(os.sep, 1)[-1])
