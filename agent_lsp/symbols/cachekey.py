"""The per-user secret that authenticates the persisted symbol index.

The index is kept in the project (`.agent-lsp/cache/symbols.bin`), so a repository can ship
one: its checksum and fingerprint are predictable, so only a secret the repository cannot know
tells a file this user wrote from a crafted one. The secret is 32 random bytes in
`$XDG_CACHE_HOME/agent-lsp/cache.key` (`~/.cache/agent-lsp/cache.key`), created on first use
(mode 0600, its folder 0700) and never inside a project; the cache carries an HMAC-SHA256 of
its content under it.

A key that cannot be read or made (a read-only home), or one that is not a private regular file
of this user (a link, another owner, readable by others, not 32 bytes), is not used: there is
then no key, and the index is neither loaded nor saved (it is built every start).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from pathlib import Path

KEY_BYTES = 32
MAC_BYTES = 32  # HMAC-SHA256
KEY_NAME = "cache.key"


def key_path() -> Path:
    """Where this user's key is kept (read from the environment on every call)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agent-lsp" / KEY_NAME


def mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


def same(expected: bytes, found: bytes) -> bool:
    return hmac.compare_digest(expected, found)


def user_key(path: Path | None = None) -> bytes | None:
    """This user's key, created on first use; None when there is no usable one."""
    try:
        path = key_path() if path is None else path
    except RuntimeError:  # no home folder to be found
        return None
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    return _create(path)


def _read(path: Path) -> bytes | None:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as source:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
            return None
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            return None
        key = source.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None


def _create(path: Path) -> bytes | None:
    """Write a fresh key beside `path` and link it into place (a racing process that made one
    first wins: its key is read and used)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        key = os.urandom(KEY_BYTES)
        descriptor = os.open(temp, flags, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(key)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            return _read(path)
        return key
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
