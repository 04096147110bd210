"""What a `SymbolIndex` keeps and answers, and what it is built with: `IndexedFile` (one file as
indexed), `SymbolHit` and `Reference` (query answers), the extractor types (`Extractor`, and
`FileExtractor` for one that reads files itself) and the walk's defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from agent_lsp.symbols.disk import Indexed
from agent_lsp.symbols.model import Definition, Engine, FileSymbols, Language

DEFAULT_SKIP_DIRS = frozenset(
    {
        "node_modules",
        "venv",
        "__pycache__",
        "build",
        "dist",
        "site-packages",
        "vendor",
        "target",
    }
)  # and every directory whose name starts with "." (.git, .venv, .tox, caches) or that holds
# a pyvenv.cfg (a virtualenv under any name)
DEFAULT_MAX_FILE_BYTES = 1_000_000
DEFAULT_MAX_FILES = 50_000

Extractor = Callable[[str, Language, Engine], FileSymbols]  # `extract(text, language, engine)`


DiskJob = tuple[Path, Language, int, bytes | None]  # path, language, size, expected digest
# key, mtime_ns, size, ctime_ns, the digest and symbols indexed so far (or None)
Stale = tuple[str, int, int, int, bytes | None, FileSymbols | None]


@runtime_checkable
class FileExtractor(Protocol):
    """An extractor that also reads files itself: `index_files` yields, for every one of the
    (path, language, size in bytes, expected digest), its position and what
    `disk.index_disk_file` gives (None when it cannot be read), in any order."""

    def __call__(self, text: str, language: Language, engine: Engine, /) -> FileSymbols: ...

    def index_files(
        self, files: Sequence[DiskJob], engine: Engine, /
    ) -> Iterator[tuple[int, Indexed | None]]: ...


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """One file as indexed; `buffer` is the editor's text when it came from `update_file`."""

    path: str  # relative to the root, POSIX separators
    mtime_ns: int
    size: int
    symbols: FileSymbols
    buffer: str | None = None
    ctime_ns: int = -1
    digest: bytes = b""  # of the disk's bytes parsed (empty for a buffer)


@dataclass(frozen=True, slots=True)
class SymbolHit:
    path: str
    definition: Definition


@dataclass(frozen=True, slots=True)
class Reference:
    path: str
    line: int
    text: str
