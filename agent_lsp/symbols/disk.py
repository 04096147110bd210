"""One file of the index read from the disk: its bytes hashed, then parsed unless the hash says
its content is the one indexed already.

The hash is what lets a warm start (or a `refresh()` after a `touch`, a checkout that rewrote
files unchanged, a `chmod`) trust an entry whose stat changed: the bytes are read and hashed, which
is far cheaper than parsing them, and only a different content is parsed again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from agent_lsp.fileio import decode_text
from agent_lsp.symbols.extract import extract
from agent_lsp.symbols.model import Engine, FileSymbols, Language

DIGEST_BYTES = 16

# (symbols, digest of the bytes): symbols None when the digest equals the expected one
Indexed = tuple[FileSymbols | None, bytes]


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).digest()


def read_disk_file(path: Path, expected: bytes | None) -> tuple[str | None, bytes] | None:
    """The file's text and the digest of its bytes; no text when the digest is `expected`
    (unchanged); None when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    found = digest(data)
    if found == expected:
        return None, found
    return decode_text(data)[0], found


def index_disk_file(
    path: Path,
    language: Language,
    engine: Engine,
    expected: bytes | None,
    extractor: Callable[[str, Language, Engine], FileSymbols],
) -> Indexed | None:
    """The file's symbols and digest; no symbols when its digest is `expected` (unchanged);
    None when it cannot be read."""
    read = read_disk_file(path, expected)
    if read is None:
        return None
    text, found = read
    if text is None:
        return None, found
    if extractor is extract:  # by path: a file parsed lately is re-parsed incrementally
        return extract(text, language, engine, key=str(path)), found
    return extractor(text, language, engine), found
