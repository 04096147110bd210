"""File helpers: atomic writes, appends and content hashes.

Writes under a workspace's `.agent-lsp/` never follow a link: from the folder holding
`.agent-lsp` (or the `within` folder a caller names) down to the file, every component must be
a real folder and the file itself no link. Each folder is opened relative to the one above it
with `O_NOFOLLOW` (where the OS has `dir_fd`), so a link swapped in between is refused too.
A refused write raises `UnsafePathError` (an `OSError`), saying which part is a link."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import IO

AGENT_DIR = ".agent-lsp"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FD = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and bool(_NOFOLLOW)


class UnsafePathError(OSError):
    """A write refused: a link (or something that is not a folder) on the way to the file."""


def guarded_top(path: Path) -> Path | None:
    """The folder holding the first `.agent-lsp` component of `path` (None: none there)."""
    parts = path.parts
    if AGENT_DIR not in parts:
        return None
    return Path(*parts[: parts.index(AGENT_DIR)])  # Path() for a relative `.agent-lsp/...`


def _refused(path: Path, part: str) -> UnsafePathError:
    return UnsafePathError(
        errno.ELOOP,
        f"{part} is a link (or not a folder); agent-lsp does not write through links "
        "(remove the link)",
        str(path),
    )


def _parts(top: Path, folder: Path) -> tuple[str, ...]:
    try:
        rel = folder.relative_to(top)
    except ValueError as exc:
        raise UnsafePathError(errno.EXDEV, f"not inside {top}", str(folder)) from exc
    if any(p in ("..", "") for p in rel.parts):
        raise UnsafePathError(errno.EINVAL, "'..' in a guarded path", str(folder))
    return rel.parts


@contextlib.contextmanager
def _folder_fd(top: Path, folder: Path, create: bool) -> Generator[int]:
    """A descriptor of `folder`, reached from `top` one folder at a time, links refused."""
    flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
    fd = os.open(top, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        walked = top
        for part in _parts(top, folder):
            walked = walked / part
            try:
                nfd = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                try:
                    nfd = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    raise _refused(walked, part) from exc
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _refused(walked, part) from exc
                raise
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def _check_components(top: Path, path: Path, create: bool) -> None:
    """Without `dir_fd` (Windows): each component checked with lstat, folders created."""
    walked = top
    for part in _parts(top, path):
        walked = walked / part
        try:
            st = os.lstat(walked)
        except FileNotFoundError:
            if walked == path or not create:
                return
            with contextlib.suppress(FileExistsError):
                walked.mkdir()
            continue
        is_junction = getattr(walked, "is_junction", lambda: False)()
        if stat.S_ISLNK(st.st_mode) or is_junction or (walked != path and not walked.is_dir()):
            raise _refused(walked, part)


def ensure_dir(folder: Path, within: Path | None = None) -> None:
    """`mkdir -p`, refusing links below `within` (default: below the `.agent-lsp` holder)."""
    top = within if within is not None else guarded_top(folder)
    if top is None:
        folder.mkdir(parents=True, exist_ok=True)
    elif _DIR_FD:
        with _folder_fd(top, folder, create=True):
            pass
    else:
        _check_components(top, folder, create=True)
        folder.mkdir(exist_ok=True)


def _atomic_write_at(dfd: int, path: Path, text: str) -> None:
    name = path.name
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        mode = None
    else:
        if stat.S_ISLNK(st.st_mode):
            raise _refused(path, name)
        mode = st.st_mode & 0o7777
    tmp = f".{name}.{os.urandom(6).hex()}.agent-lsp.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dfd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def atomic_write(path: Path, text: str, within: Path | None = None) -> None:
    """Write `text` to `path` through a temporary file and a rename, keeping the file's mode.
    Under `.agent-lsp/` (or below `within`) no component may be a link (`UnsafePathError`)."""
    top = within if within is not None else guarded_top(path)
    if top is not None and _DIR_FD:
        with _folder_fd(top, path.parent, create=True) as dfd:
            _atomic_write_at(dfd, path, text)
        return
    if top is not None:
        _check_components(top, path, create=True)
    _plain_atomic_write(path, text)


def _plain_atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".agent-lsp.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            Path(tmp).chmod(mode)
        Path(tmp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise


def open_append(path: Path, within: Path | None = None) -> IO[str]:
    """`path` opened for appending text (created if missing); under `.agent-lsp/` (or below
    `within`) never through a link (`UnsafePathError`)."""
    top = within if within is not None else guarded_top(path)
    if top is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("a", encoding="utf-8")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
    if _DIR_FD:
        with _folder_fd(top, path.parent, create=True) as dfd:
            try:
                fd = os.open(path.name, flags, 0o600, dir_fd=dfd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK):
                    raise _refused(path, path.name) from exc
                raise
    else:
        _check_components(top, path, create=True)
        fd = os.open(path, flags, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def read_disk_text(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace", newline="") as fh:
        return fh.read()
