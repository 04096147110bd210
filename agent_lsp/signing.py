"""The per-user key, and records signed with it: what tells a file this user's agent-lsp wrote
from one a repository shipped.

Everything the harness keeps under a project's `.agent-lsp/` and later acts on — the symbol
index, improvement records, task and team checkpoints (and so undo), review proposals, the
record of commands run — sits in a folder a repository can ship. Its shape is predictable, so
only a secret the repository cannot know proves a file was written here, by this user. The
secret is 32 random bytes in `$XDG_CACHE_HOME/agent-lsp/cache.key` (`~/.cache/agent-lsp/`),
created on first use (mode 0600, its folder 0700) and never inside a project.

`seal(kind, body)` puts a signature line in front of a record's bytes: an HMAC-SHA256 under
the key of the record's kind and body, so a record of one kind cannot pass for another;
`unseal(kind, data)` gives the body back, or raises `Unsigned` saying why it is not this
user's (no signature, a wrong one, no usable key). A caller ignores such a record and says so.

A key that cannot be read or made (a read-only home), or one that is not a private regular file
of this user (a link, another owner, readable by others, not 32 bytes), is not used: records
are then signed with a key of this process only — read back while it runs (a team's undo
record, a server's own checkpoints), refused by any later one — and the symbol index is
neither loaded nor saved. Deleting the key forgets every record: they are all refused from
then on.

This module imports nothing of agent_lsp (a shared root module)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from pathlib import Path

__all__ = ["Unsigned", "key_path", "mac", "same", "seal", "unseal", "user_folder", "user_key"]

KEY_BYTES = 32
MAC_BYTES = 32  # HMAC-SHA256
KEY_NAME = "cache.key"
_HEAD = b"agent-lsp-signed "  # + hex signature + "\n"
_PROCESS_KEY = os.urandom(KEY_BYTES)  # when there is no usable user key: this process's records


class Unsigned(ValueError):
    """A record that is not this user's: unsigned, signed with another key, or no key here."""


def user_folder() -> Path:
    """This user's agent-lsp folder outside every project (read from the environment on every
    call): `$XDG_CACHE_HOME/agent-lsp`, else `~/.cache/agent-lsp`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agent-lsp"


def key_path() -> Path:
    """Where this user's key is kept."""
    return user_folder() / KEY_NAME


def mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()


def same(expected: bytes, found: bytes) -> bool:
    return hmac.compare_digest(expected, found)


def _signature(key: bytes, kind: str, body: bytes) -> bytes:
    return mac(key, kind.encode("utf-8") + b"\0" + body).hex().encode("ascii")


def seal(kind: str, body: bytes, key: bytes | None = None) -> bytes:
    """`body` with the signature line of a record of `kind` in front (`key`: default this
    user's, else this process's)."""
    key = (user_key() or _PROCESS_KEY) if key is None else key
    return _HEAD + _signature(key, kind, body) + b"\n" + body


def unseal(kind: str, data: bytes, key: bytes | None = None) -> bytes:
    """The body of a record `seal(kind, …)` wrote with this user's key; `Unsigned` otherwise."""
    if not data.startswith(_HEAD):
        raise Unsigned("not signed by agent-lsp for this user (a file the project brought?)")
    line, _, body = data.partition(b"\n")
    found = line[len(_HEAD) :]
    if key is None:
        key = user_key()
        if key is None:
            if same(_signature(_PROCESS_KEY, kind, body), found):
                return body
            raise Unsigned(f"no usable user key ({key_path()}) to verify it with")
    if not same(_signature(key, kind, body), found):
        raise Unsigned("its signature is not this user's (a file the project brought?)")
    return body


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
