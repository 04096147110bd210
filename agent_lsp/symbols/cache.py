"""The persisted symbol index: `.agent-lsp/cache/symbols.bin`, so that a second start on an
unchanged tree parses nothing.

One file: a magic line, an HMAC-SHA256 of the rest under this user's secret key
(`agent_lsp.signing`: kept outside every project, so a repository cannot ship a cache that
passes), and the `marshal`led entries (plain tuples,
dicts, strings and bytes: `marshal` loads them several times faster than `pickle` or JSON, and
unlike `pickle` it runs no code). Each entry is a file's stamp when it was parsed (mtime_ns,
ctime_ns, size), the digest of the bytes parsed, and its definitions and identifier counts,
each `marshal`led on its own (`packed`: unpacked only when read); beside the entries, the name
table of the index (name -> files defining it), also packed, so that a warm start rebuilds
neither.

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
import importlib
import marshal
import os
import stat
import sys
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import cast

from agent_lsp import signing
from agent_lsp.symbols.disk import digest
from agent_lsp.symbols.extract import describe_engines
from agent_lsp.symbols.model import SUFFIXES, Engine, FileSymbols, Language
from agent_lsp.symbols.packed import (
    Counts,
    Definitions,
    defined_names,
    pack_counts,
    pack_definitions,
)

AGENT_DIR = ".agent-lsp"  # `memory.layout.AGENT_DIR` (importing the memory package is slow)
MAGIC = b"agent-lsp symbol index 3\n"
FORMAT = 3
RACY_NS = 2_000_000_000
GRAMMARS = (
    "tree-sitter",
    "tree-sitter-python",
    "tree-sitter-javascript",
    "tree-sitter-typescript",
    "tree-sitter-go",
)
CODE = (  # agent_lsp.symbols.*
    "extract",
    "incremental",
    "lexical",
    "model",
    "packed",
    "pyscan",
    "regex_engine",
    "ts_engine",
)

Stamp = tuple[int, int, int]  # mtime_ns, ctime_ns, size
# key -> (stamp, digest, symbols)
Entries = dict[str, tuple[Stamp, bytes, FileSymbols]]
Names = dict[str, tuple[str, ...]]  # defined name -> keys of the files defining it
# key, stamp, digest, language, engine, definitions and identifier counts (each marshalled)
_Stored = tuple[str, Stamp, bytes, str, str, bytes, bytes]


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


def fingerprint(engine: Engine, languages: Iterable[Language] | None = None) -> tuple[object, ...]:
    """What must match for entries (of `languages`: default every one) to be used at all.
    Only the engines of the languages stored are described: a Python project's index never
    loads a tree-sitter grammar to be saved or loaded."""
    stored = tuple(sorted(set(SUFFIXES.values()) if languages is None else set(languages)))
    return (
        FORMAT,
        sys.version_info[:2],
        engine,
        stored,
        describe_engines(engine, stored),
        _versions(),
    )


def _stored_languages(mark: object) -> tuple[Language, ...] | None:
    """The languages a stored fingerprint names, or None when it names none we know."""
    if not isinstance(mark, tuple) or len(cast(tuple[object, ...], mark)) != 6:
        return None
    languages = cast(tuple[object, ...], mark)[3]
    known = set(SUFFIXES.values())
    if not isinstance(languages, tuple) or not all(
        isinstance(name, str) and name in known for name in cast(tuple[object, ...], languages)
    ):
        return None
    return cast(tuple[Language, ...], languages)


def load(
    path: Path, engine: Engine, root: Path | None = None, secret: bytes | None = None
) -> Entries:
    """The stored entries (see `load_index`)."""
    return load_index(path, engine, root, secret)[0]


def load_index(
    path: Path, engine: Engine, root: Path | None = None, secret: bytes | None = None
) -> tuple[Entries, bytes]:
    """The stored entries and their name table (packed: `unpack_names`), or none when the file
    is missing, damaged, not authenticated by `secret` (default: this user's,
    `signing.user_key`) or from other code, or not a regular file reached without links (from
    `root`, when given): a checked-out tree could hold a FIFO or a link to a device there.
    Definitions and identifier counts stay packed (`packed.Definitions`, `packed.Counts`)
    until read, and so does the name table (unpacking it alone costs about as much as the
    rest of a warm start)."""
    if root is not None and not _inside(path.parent, root):
        return {}, b""
    try:
        data = _read_regular(path)
    except OSError:
        return {}, b""
    head = len(MAGIC)
    tag = data[head : head + signing.MAC_BYTES]
    body = data[head + signing.MAC_BYTES :]
    if data[:head] != MAGIC or len(tag) != signing.MAC_BYTES:
        return {}, b""
    secret = signing.user_key() if secret is None else secret
    if secret is None or not signing.same(signing.mac(secret, body), tag):
        return {}, b""
    try:
        stored = marshal.loads(body)
        if not isinstance(stored, tuple) or len(cast(tuple[object, ...], stored)) != 4:
            return {}, b""
        mark, code, rows, names = cast(tuple[object, object, list[_Stored], object], stored)
        languages = _stored_languages(mark)
        if languages is None or mark != fingerprint(engine, languages):
            return {}, b""
        if code != _code_digest() or not isinstance(names, bytes):
            return {}, b""
        return dict(_entries(rows)), names
    except Exception:  # a well-checksummed file of another shape: ignore it all
        return {}, b""


def unpack_names(packed: bytes) -> Names | None:
    """The name table `load_index` gave packed, or None when it is not one."""
    try:
        names: object = marshal.loads(packed)
        return cast(Names, names) if isinstance(names, dict) else None
    except Exception:  # a well-checksummed file of another shape: ignore it all
        return None


def _entries(rows: list[_Stored]) -> Iterable[tuple[str, tuple[Stamp, bytes, FileSymbols]]]:
    """Entries from the stored rows (names come back interned: `marshal` keeps that)."""
    for key, stamp, found, language, used, definitions, identifiers in rows:
        if not isinstance(cast(object, definitions), bytes) or not isinstance(
            cast(object, identifiers), bytes
        ):  # checked: unpacked later
            raise TypeError("not a stored entry")
        symbols = FileSymbols(
            cast(Language, language), used, Definitions(definitions), Counts(identifiers)
        )
        yield key, (stamp, found, symbols)


def names_of(entries: Entries) -> Names:
    """The name table of `entries` (what `SymbolIndex` keeps), built from their definitions."""
    table: dict[str, list[str]] = {}
    for key, (_, _, symbols) in entries.items():
        for name in defined_names(symbols.definitions):
            keys = table.setdefault(name, [])
            if not keys or keys[-1] != key:
                keys.append(key)
    return {name: tuple(keys) for name, keys in table.items()}


def save(
    path: Path,
    root: Path,
    entries: Entries,
    engine: Engine,
    secret: bytes | None = None,
    names: Names | bytes | None = None,
) -> bool:
    """Write the entries and their name table (`names`, default: built from them),
    authenticated by `secret` (default: this user's), atomically (a temp file renamed over the
    old one); False when it could not be written (no key, a read-only tree, a link on the way
    out of the project)."""
    secret = signing.user_key() if secret is None else secret
    if secret is None:
        return False
    racy_after = time.time_ns() - RACY_NS
    rows: list[_Stored] = []
    for key, (stamp, found, symbols) in entries.items():
        if stamp[0] >= racy_after:
            stamp = (-1, -1, -1)
        rows.append(
            (
                key,
                stamp,
                found,
                symbols.language,
                symbols.engine,
                pack_definitions(symbols.definitions),
                pack_counts(symbols.identifiers),
            )
        )
    table = (
        names
        if isinstance(names, bytes)
        else marshal.dumps(names_of(entries) if names is None else names)
    )  # pyright: ignore[reportArgumentType]
    languages = {symbols.language for _, _, symbols in entries.values()}
    body = marshal.dumps((fingerprint(engine, languages), _code_digest(), rows, table))  # pyright: ignore[reportArgumentType]
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
            out.write(MAGIC + signing.mac(secret, body) + body)
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
