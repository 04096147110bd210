"""The persisted symbol index: `.agent-lsp/cache/symbols.bin`, so that a second start on an
unchanged tree parses nothing.

One file: a magic line, an HMAC-SHA256 of the rest under this user's secret key
(`cachekey`: kept outside every project, so a repository cannot ship a cache that passes), and
the `marshal`led entries (plain tuples,
dicts and strings: `marshal` loads them several times faster than `pickle` or JSON, and unlike
`pickle` it runs no code). Each entry is a file's stamp when it was parsed (mtime_ns, ctime_ns,
size), the digest of the bytes parsed, and its symbols as tuples.

Never trusted blindly:
- a file whose HMAC does not check under this user's key (written by another user or machine,
  crafted, or shipped in the repository) is ignored, as is every file when there is no key;
- a missing, truncated or corrupt file (bad magic, HMAC, shape), or one written by another
  format, Python, tree-sitter, grammar or extraction code (a fingerprint of all of them), is
  ignored: the index is built as if there were no cache;
- an entry whose stamp differs from the disk's is checked by its digest: the file is read and
  hashed, and parsed again only when the content differs (the ctime is in the stamp because no
  one can set it: a file rewritten with its size and mtime put back still shows a new ctime);
- an entry whose mtime was within `RACY_NS` of the save is stored without a stamp (a write in
  the same clock tick after it was read would keep size and mtime), so it is always hashed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import marshal
import os
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import cast

from agent_lsp.symbols import cachekey
from agent_lsp.symbols.disk import digest
from agent_lsp.symbols.extract import describe_engines
from agent_lsp.symbols.model import Definition, Engine, FileSymbols, Language

AGENT_DIR = ".agent-lsp"  # `memory.layout.AGENT_DIR` (importing the memory package is slow)
MAGIC = b"agent-lsp symbol index 2\n"
FORMAT = 2
RACY_NS = 2_000_000_000
GRAMMARS = (
    "tree-sitter",
    "tree-sitter-python",
    "tree-sitter-javascript",
    "tree-sitter-typescript",
    "tree-sitter-go",
)
CODE = ("extract", "lexical", "model", "regex_engine", "ts_engine")  # agent_lsp.symbols.*

Stamp = tuple[int, int, int]  # mtime_ns, ctime_ns, size
Row = tuple[str, str, int, int, str | None, str]
# key -> (stamp, digest, symbols)
Entries = dict[str, tuple[Stamp, bytes, FileSymbols]]
_Stored = tuple[str, Stamp, bytes, str, str, tuple[Row, ...], bytes]  # identifiers marshalled


def cache_path(root: Path) -> Path:
    """Where the index of the project at `root` is kept (out of git: `.agent-lsp/.gitignore`)."""
    return root / AGENT_DIR / "cache" / "symbols.bin"


@cache
def _code_digest() -> bytes:
    """The extraction code itself: a changed engine invalidates every entry."""
    modules = (importlib.import_module(f"agent_lsp.symbols.{name}") for name in CODE)
    parts = b"".join(Path(str(m.__file__)).read_bytes() for m in modules)
    return digest(parts)


@cache
def _versions() -> tuple[str, ...]:
    from importlib.metadata import version

    found: list[str] = []
    for name in GRAMMARS:
        try:
            found.append(version(name))
        except Exception:  # not installed, or no metadata
            found.append("-")
    return tuple(found)


def fingerprint(engine: Engine) -> tuple[object, ...]:
    """What must match for entries to be used at all."""
    return (FORMAT, sys.version_info[:2], engine, describe_engines(engine), _versions())


def load(
    path: Path, engine: Engine, root: Path | None = None, secret: bytes | None = None
) -> Entries:
    """The stored entries, or none when the file is missing, damaged, not authenticated by
    `secret` (default: this user's, `cachekey.user_key`) or from other code, or not a regular
    file reached without links (from `root`, when given): a checked-out tree could hold a
    FIFO or a link to a device there."""
    if root is not None and not _inside(path.parent, root):
        return {}
    try:
        data = _read_regular(path)
    except OSError:
        return {}
    head = len(MAGIC)
    tag = data[head : head + cachekey.MAC_BYTES]
    body = data[head + cachekey.MAC_BYTES :]
    if data[:head] != MAGIC or len(tag) != cachekey.MAC_BYTES:
        return {}
    secret = cachekey.user_key() if secret is None else secret
    if secret is None or not cachekey.same(cachekey.mac(secret, body), tag):
        return {}
    try:
        stored = marshal.loads(body)
        if not isinstance(stored, tuple) or len(cast(tuple[object, ...], stored)) != 3:
            return {}
        mark, code, rows = cast(tuple[object, object, list[_Stored]], stored)
        if mark != fingerprint(engine) or code != _code_digest():
            return {}
        return dict(_entries(rows))
    except Exception:  # a well-checksummed file of another shape: ignore it all
        return {}


def _entries(rows: list[_Stored]) -> Iterable[tuple[str, tuple[Stamp, bytes, FileSymbols]]]:
    """Entries from the stored rows (names come back interned: `marshal` keeps that)."""
    new = object.__new__
    fields = [getattr(Definition, field.name).__set__ for field in dataclasses.fields(Definition)]
    set_name, set_kind, set_line, set_end, set_container, set_signature = fields
    for key, stamp, found, language, used, definitions, identifiers in rows:
        if not isinstance(cast(object, identifiers), bytes):  # checked: unpacked later
            raise TypeError("not a stored entry")
        built: list[Definition] = []
        for name, kind, line, end_line, container, signature in definitions:
            d = new(Definition)
            set_name(d, name)
            set_kind(d, kind)
            set_line(d, line)
            set_end(d, end_line)
            set_container(d, container)
            set_signature(d, signature)
            built.append(d)
        symbols = FileSymbols(cast(Language, language), used, tuple(built), Counts(identifiers))
        yield key, (stamp, found, symbols)


class Counts(Mapping[str, int]):
    """A file's identifier counts, unpacked from their stored bytes on first use: a warm start
    needs only the definitions; the counts are read by the first query that wants them."""

    __slots__ = ("_counts", "_packed")

    def __init__(self, packed: bytes) -> None:
        self._packed = packed
        self._counts: dict[str, int] | None = None

    def _unpacked(self) -> dict[str, int]:
        counts = self._counts
        if counts is None:
            try:
                loaded: object = marshal.loads(self._packed)
            except Exception:  # cannot happen for a checksummed file written by save()
                loaded = {}
            counts = self._counts = cast(dict[str, int], loaded if isinstance(loaded, dict) else {})
            self._packed = b""
        return counts

    def __getitem__(self, name: str) -> int:
        return self._unpacked()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._unpacked()

    def get(self, name: str, default: int = 0) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        return self._unpacked().get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._unpacked())

    def __len__(self) -> int:
        return len(self._unpacked())

    def __repr__(self) -> str:
        return repr(self._unpacked())


def _packed(identifiers: Mapping[str, int]) -> bytes:
    if isinstance(identifiers, Counts) and identifiers._counts is None:  # pyright: ignore[reportPrivateUsage]
        return identifiers._packed  # pyright: ignore[reportPrivateUsage]
    return marshal.dumps(dict(identifiers))


def save(
    path: Path, root: Path, entries: Entries, engine: Engine, secret: bytes | None = None
) -> bool:
    """Write the entries, authenticated by `secret` (default: this user's), atomically (a temp
    file renamed over the old one); False when it could not be written (no key, a read-only
    tree, a link on the way out of the project)."""
    secret = cachekey.user_key() if secret is None else secret
    if secret is None:
        return False
    racy_after = time.time_ns() - RACY_NS
    rows: list[_Stored] = []
    for key, (stamp, found, symbols) in entries.items():
        if stamp[0] >= racy_after:
            stamp = (-1, -1, -1)
        definitions = tuple(
            (d.name, d.kind, d.line, d.end_line, d.container, d.signature)
            for d in symbols.definitions
        )
        rows.append(
            (
                key,
                stamp,
                found,
                symbols.language,
                symbols.engine,
                definitions,
                _packed(symbols.identifiers),
            )
        )
    body = marshal.dumps((fingerprint(engine), _code_digest(), rows))  # pyright: ignore[reportArgumentType]
    if not _inside(path.parent, root):
        return False
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not _inside(path.parent, root):
            return False
        ignore = path.parent / ".gitignore"
        if not ignore.exists() and not ignore.is_symlink():  # out of git before `.agent-lsp/`
            ignore.write_text("# agent-lsp: a cache, rebuilt when missing\n*\n")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(temp, flags, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(MAGIC + cachekey.mac(secret, body) + body)
        temp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()
        return False
    return True


def _read_regular(path: Path) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as source:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path} is not a regular file")
        return source.read()


def _inside(folder: Path, root: Path) -> bool:
    """No link on the way from `root` to `folder` (the parts that exist): writes stay inside."""
    current = root
    for part in folder.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return False
        if not current.exists():
            return True
    return True
