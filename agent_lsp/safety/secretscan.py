"""Secret files inside a folder the sandbox exposes, found with no cap on their number.

The sandbox hides each one (an empty file or folder in its place). The walk is remembered per
folder with the folder's mtime: a name added, removed or renamed changes the mtime of the
folder holding it, so a later scan re-lists only the folders that changed and stats the rest.
A walk that cannot finish in time is an error, never "no secrets" (fail closed)."""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent_lsp.safety.paths import SECRET_DIRS, is_secret_path

__all__ = ["SKIP_DIRS", "SecretScan", "SecretScanError"]

# Installed dependencies and git's own store: not the user's secrets, and huge.
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__"})


class SecretScanError(RuntimeError):
    """The walk did not finish: the caller must not run the command."""


@dataclass(frozen=True)
class _Listing:
    mtime_ns: int
    subdirs: tuple[str, ...]
    secrets: tuple[str, ...]  # names of secret files and folders in this folder


class SecretScan:
    """The secret files and folders under one root, kept current between scans."""

    def __init__(self, root: Path, home: Path, budget: float = 20.0) -> None:
        self.root = Path(os.path.realpath(root))
        self.home = home
        self.budget = budget  # seconds a full walk may take before it counts as failed
        self._cache: dict[str, _Listing] = {}

    def scan(self) -> list[Path]:
        """Every secret under the root (files and whole secret folders); raises
        `SecretScanError` when the walk cannot finish within the budget."""
        deadline = time.monotonic() + self.budget
        found: list[Path] = []
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
            stack += [os.path.join(folder, d) for d in listing.subdirs]  # noqa: PTH118 - str paths: fast
        self._cache = seen
        return found

    def _listing(self, folder: str) -> _Listing | None:
        try:
            mtime = os.stat(folder, follow_symlinks=False).st_mtime_ns  # noqa: PTH116
        except OSError:
            return None
        cached = self._cache.get(folder)
        if cached is not None and cached.mtime_ns == mtime:
            return cached
        subdirs: list[str] = []
        secrets: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    self._classify(folder, entry, subdirs, secrets)
        except OSError:
            return None
        listing = _Listing(mtime, tuple(subdirs), tuple(secrets))
        self._cache[folder] = listing
        return listing

    def _classify(
        self, folder: str, entry: os.DirEntry[str], subdirs: list[str], secrets: list[str]
    ) -> None:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            is_link = entry.is_symlink()
        except OSError:
            return
        if is_link:
            return  # the link's target is what the sandbox shows; it is hidden where it is
        if is_dir:
            if entry.name in SECRET_DIRS:
                secrets.append(entry.name)
            elif entry.name not in SKIP_DIRS and not _is_venv(entry.path):
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


def _is_venv(path: str) -> bool:
    return Path(path, "pyvenv.cfg").is_file()
