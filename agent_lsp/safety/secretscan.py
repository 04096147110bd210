"""Secret files inside a folder the sandbox exposes, found with no cap on their number, and
the git folders at any depth (nested repositories, submodules) and the editor settings and
`.envrc` files at any depth, which it keeps read-only.

The sandbox hides each secret (an empty file or folder in its place). Everything is walked —
installed dependencies too: a folder is never skipped for its name or a marker file the
repository could ship. The walk is remembered per folder with the folder's inode, mtime and
ctime: a name added, removed or renamed changes the folder's mtime, and a program that resets
the mtime cannot reset the ctime, so a later scan re-lists only the folders that changed and
stats the rest. A walk that cannot finish in time is an error, never "no secrets"."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agent_lsp.safety.paths import SECRET_DIRS, is_secret_path
from agent_lsp.safety.protect import PROTECTED_NAMES

__all__ = ["Found", "SecretScan", "SecretScanError"]

GIT = ".git"  # a folder or a file (`gitdir: …`): not walked, kept read-only where it is
# editor settings, `.envrc`, `.agent-lsp`: kept read-only at any depth (still walked)
GUARDED = frozenset(PROTECTED_NAMES) - {GIT}


class SecretScanError(RuntimeError):
    """The walk did not finish: the caller must not run the command."""


@dataclass(frozen=True)
class _Listing:
    key: tuple[int, int, int]  # inode, mtime, ctime of the folder
    subdirs: tuple[str, ...]
    secrets: tuple[str, ...]  # names of secret files and folders in this folder
    git: bool  # the folder holds a `.git`
    guarded: tuple[str, ...]  # names in GUARDED here (links included)


@dataclass(frozen=True)
class Found:
    secrets: list[Path]
    gits: list[Path]  # every `.git` under the root (the root's own included)
    guarded: list[Path] = field(default_factory=list[Path])  # every GUARDED entry under it


class SecretScan:
    """The secret files and folders under one root, kept current between scans."""

    def __init__(
        self,
        root: Path,
        home: Path,
        budget: float = 20.0,
        hide: Callable[[str], bool] | None = None,
    ) -> None:
        """`hide(path)`: more files and folders to hide (the deny path rules), by absolute
        path."""
        self.root = Path(os.path.realpath(root))
        self.home = home
        self.budget = budget  # seconds a full walk may take before it counts as failed
        self.hide = hide
        self._cache: dict[str, _Listing] = {}

    def scan(self) -> Found:
        """Every secret under the root (files and whole secret folders) and every `.git`;
        raises `SecretScanError` when the walk cannot finish within the budget."""
        deadline = time.monotonic() + self.budget
        found: list[Path] = []
        gits: list[Path] = []
        guarded: list[Path] = []
        seen: dict[str, _Listing] = {}
        stack = [str(self.root)]
        while stack:
            if time.monotonic() > deadline:
                raise SecretScanError(
                    f"{self.root} is too big to check for secret files within {self.budget:.0f} s"
                )
            folder = stack.pop()
            listing = self._listing(folder)
            if listing is None:
                continue
            seen[folder] = listing
            found += [Path(folder, n) for n in listing.secrets]
            if listing.git:
                gits.append(Path(folder, GIT))
            guarded += [Path(folder, n) for n in listing.guarded]
            stack += [os.path.join(folder, d) for d in listing.subdirs]  # noqa: PTH118 - str paths: fast
        self._cache = seen
        return Found(found, gits, guarded)

    def _listing(self, folder: str) -> _Listing | None:
        try:
            st = os.stat(folder, follow_symlinks=False)  # noqa: PTH116
        except OSError:
            return None
        key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        cached = self._cache.get(folder)
        if cached is not None and cached.key == key:
            return cached
        subdirs: list[str] = []
        secrets: list[str] = []
        git = False
        guarded: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name == GIT:
                        git = True
                        continue
                    if entry.name in GUARDED:
                        guarded.append(entry.name)
                    self._classify(entry, subdirs, secrets)
        except OSError:
            return None
        listing = _Listing(key, tuple(subdirs), tuple(secrets), git, tuple(guarded))
        self._cache[folder] = listing
        return listing

    def _classify(self, entry: os.DirEntry[str], subdirs: list[str], secrets: list[str]) -> None:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_link = entry.is_symlink()
        except OSError:
            return
        if is_link:
            return  # the link's target is what the sandbox shows; it is hidden where it is
        if self.hide is not None and self.hide(entry.path):
            secrets.append(entry.name)
        elif is_dir:
            if entry.name in SECRET_DIRS:
                secrets.append(entry.name)
            else:
                subdirs.append(entry.name)
        elif _secret_name(entry.name):
            secrets.append(entry.name)


@functools.lru_cache(maxsize=1 << 16)
def _secret_name(name: str) -> bool:
    """A secret by its name alone (names repeat across folders: remembered). Secret folders
    on the way are pruned by the walk; the home's own credential folders are the home view's
    business (`homeview`)."""
    return is_secret_path(PurePosixPath(name), _NO_HOME)


_NO_HOME = Path("/nonexistent-home")
