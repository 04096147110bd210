"""What stays read-only inside a folder a sandboxed program may write, and the clean-up of
what it must not have created.

Read-only — as mount points, so they cannot be renamed, replaced or deleted either — are the
files and folders that make something run outside the sandbox later or widen the agent: every
`.git` at any depth (git honours its config: fsmonitor, hooks, filters) and the folders a
`.git` file points to, the hooks folder and include files a repository config names inside the
workspace, `.agent-lsp/`, the editor settings and `.envrc` — at any depth too (an editor reads
`.dir-locals.el` from every folder above a file, direnv an `.envrc` in any folder entered).
A `.git/config` holding a password in a URL is shown with the password removed. One of these
a command created is moved away and deleted when it ends."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "PROTECTED_NAMES",
    "Identity",
    "ProtectionError",
    "created_protected",
    "existing_protected",
    "guarded_below",
    "read_only_args",
    "remove_created",
]

PROTECTED_NAMES = (
    ".git",
    ".agent-lsp",
    ".vscode",
    ".idea",
    ".zed",
    ".helix",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".dir-locals.el",
    ".dir-locals-2.el",
    ".envrc",
)
_CONFIG_PATHS = re.compile(r"^\s*(?:hookspath|path)\s*=\s*(.+?)\s*$", re.I | re.M)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+):[^/\s@]+@")
_GITDIR = re.compile(r"^gitdir:\s*(.+?)\s*$", re.M)


class ProtectionError(RuntimeError):
    """Something a command created could not be removed."""


def read_only_args(root: Path, gits: Iterable[Path], scratch: Path | None) -> list[str]:
    """bwrap arguments keeping the protected files of the writable `root` read-only; `gits`
    are the protected entries found anywhere under it (`.git`, editor settings, `.envrc`);
    `scratch` holds sanitised copies."""
    with contextlib.suppress(OSError):  # the policy folder exists: none can be made inside
        (root / ".agent-lsp").mkdir(exist_ok=True)
    targets: list[Path] = [root / n for n in PROTECTED_NAMES]
    for git in dict.fromkeys([root / ".git", *gits]):
        targets += _git_targets(root, git) if git.name == ".git" else [git]
    out: list[str] = []
    for target in dict.fromkeys(targets):
        out += _mount_read_only(root, target)
    config = root / ".git" / "config"
    if scratch is not None and config.is_file() and not config.is_symlink():
        out += _sanitised_config(config, scratch)
    return out


def _git_targets(root: Path, git: Path) -> list[Path]:
    """The `.git` itself, where a `.git` file points, and the hooks folder and include files
    its config names, when they are inside `root`."""
    found = [git]
    folder = git
    if git.is_file() and not git.is_symlink():
        with contextlib.suppress(OSError, UnicodeDecodeError):
            match = _GITDIR.search(git.read_text(encoding="utf-8"))
            if match:
                folder = (git.parent / match.group(1)).resolve()
                found.append(folder)
    for name in ("config", "config.worktree", "commondir"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            text = (folder / name).read_text(encoding="utf-8")
            if name == "commondir":
                found.append((folder / text.strip()).resolve())
                continue
            for value in _CONFIG_PATHS.findall(text):
                path = Path(value.strip('"')).expanduser()
                # relative: hooksPath from the work tree, include paths from the config
                found += [path] if path.is_absolute() else [git.parent / path, folder / path]
    real = Path(os.path.realpath(root))
    return [p for p in found if Path(os.path.realpath(p)).is_relative_to(real)]


def _mount_read_only(root: Path, target: Path) -> list[str]:
    if target.is_symlink():  # mount what it points to, when that is in the workspace
        real = Path(os.path.realpath(target))
        inside = real.is_relative_to(Path(os.path.realpath(root)))
        return ["--ro-bind", str(real), str(real)] if inside and real.exists() else []
    if target.exists():
        return ["--ro-bind", str(target), str(target)]
    return []


def _sanitised_config(config: Path, scratch: Path) -> list[str]:
    """A remote URL with a password in `.git/config`: programs see it without."""
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if not _URL_PASSWORD.search(text):
        return []
    clean = _URL_PASSWORD.sub(r"\1@", text)
    copy = scratch / f"git-config-{hashlib.sha256(clean.encode()).hexdigest()[:16]}"
    if not copy.exists():
        copy.write_text(clean, encoding="utf-8")
    return ["--ro-bind", str(copy), str(config)]


Identity = tuple[int, int]  # device and inode: what a rename of a parent folder keeps


def existing_protected(root: Path, gits: Iterable[Path] = ()) -> dict[Path, Identity]:
    """The protected entries under `root` (those at the top, and `gits`: the ones found at any
    depth), each with its identity."""
    out: dict[Path, Identity] = {}
    for path in [*(root / n for n in PROTECTED_NAMES), *gits]:
        with contextlib.suppress(OSError):
            st = path.lstat()
            out[path] = (st.st_dev, st.st_ino)
    return out


def created_protected(
    root: Path, before: Mapping[Path, Identity], gits: Iterable[Path] = ()
) -> list[Path]:
    """Protected entries under `root` that were not there before (created by a command), by
    identity, not by path: one made where a protected entry was, after its parent folder was
    renamed away, is new; the user's own, moved with its folder, is not. An entry inside
    another one is left to go with it."""
    known = set(before.values())
    now = existing_protected(root, gits)
    made = sorted(p for p, identity in now.items() if identity not in known)
    return [p for p in made if not any(p.is_relative_to(o) and p != o for o in made)]


def guarded_below(folders: Iterable[Path], limit: int = 20_000) -> list[Path]:
    """Protected names inside `folders` (the secret folders the scan hides whole and does not
    walk: a `.ssh/.git` a command made there is found all the same)."""
    found: list[Path] = []
    seen = 0
    for folder in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        for current, dirs, files in os.walk(folder):
            seen += len(dirs) + len(files)
            for name in [*dirs, *files]:
                if name in PROTECTED_NAMES:
                    found.append(Path(current, name))
            dirs[:] = [d for d in dirs if d != ".git"]
            if seen > limit:
                break
    return found


def remove_created(root: Path, paths: Iterable[Path]) -> list[str]:
    """Move each away (a harmless name, so git and the editor stop seeing it at once), then
    delete it; their names relative to `root`. Raises `ProtectionError` when one is still
    there."""
    removed: list[str] = []
    for path in paths:
        away = path.with_name(f".agent-lsp-removed-{uuid.uuid4().hex}")
        try:
            path.rename(away)
        except OSError as exc:
            raise ProtectionError(f"could not remove {path}: {exc}") from exc
        subprocess.run(
            ["rm", "-rf", "--one-file-system", "--", str(away)],
            check=False,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
        )
        if os.path.lexists(path):
            raise ProtectionError(f"could not remove {path}")
        removed.append(
            path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        )
    return removed
