"""The symbol index: per-file definitions and references (Python scanned by `pyscan.py`, the
other languages parsed by tree-sitter when installed, a regex fallback otherwise), a
project-wide `SymbolIndex`, and a ranked repository map.

`SymbolIndex` (`index.py`) is put together from one module per responsibility: `table.py` (the
files and the name table), `persist.py` (the persisted index, `cache.py`), `refresh.py` (the
walk and re-reads), `buffers.py` (editor buffers) and `queries.py`; its records are in
`entries.py`. Big files are parsed in a child process (`worker.py`, the child's life kept by
`keeper.py`). A file parsed lately is re-parsed incrementally from its kept syntax tree
(`incremental.py`).

May import: the shared root modules (`fileio`) and `adapters`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from agent_lsp.symbols.entries import IndexedFile, Reference, SymbolHit
from agent_lsp.symbols.extract import describe_engines, engine_for, extract
from agent_lsp.symbols.model import Definition, FileSymbols, language_for

if TYPE_CHECKING:
    from agent_lsp.symbols.index import SymbolIndex
    from agent_lsp.symbols.repomap import repo_map

# Imported when first asked for, so that the parse worker (`child.py`) imports only the
# extraction modules it runs, not the index and the map.
_LATER = {"SymbolIndex": "index", "repo_map": "repomap"}

__all__ = [
    "Definition",
    "FileSymbols",
    "IndexedFile",
    "Reference",
    "SymbolHit",
    "SymbolIndex",
    "describe_engines",
    "engine_for",
    "extract",
    "language_for",
    "repo_map",
]


def __getattr__(name: str) -> object:
    home = _LATER.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
