"""The symbol index: per-file definitions and references (tree-sitter when installed, a regex
fallback otherwise), a project-wide `SymbolIndex`, and a ranked repository map.

May import: the shared root modules (`fileio`) and `adapters`.
"""

from agent_lsp.symbols.extract import describe_engines, engine_for, extract
from agent_lsp.symbols.index import IndexedFile, Reference, SymbolHit, SymbolIndex
from agent_lsp.symbols.model import Definition, FileSymbols, language_for
from agent_lsp.symbols.repomap import repo_map

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
