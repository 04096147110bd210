"""Per-file symbols: definitions (tree-sitter, or the regex fallback) and identifier references.

`extract(text, language)` picks tree-sitter when it and the grammar are importable; pass
`engine="regex"` to force the fallback, `engine="tree-sitter"` to require the parser. With a
`key` (a disk file's path: `disk.index_disk_file` passes it), tree-sitter re-parses a file it
parsed lately incrementally (`incremental.py`): the same symbols, for a fraction of the parse.
"""

from __future__ import annotations

from agent_lsp.symbols import incremental, regex_engine, ts_engine
from agent_lsp.symbols.lexical import identifier_counts
from agent_lsp.symbols.model import (
    CLASS_LIKE,
    SUFFIXES,
    Definition,
    Engine,
    FileSymbols,
    Found,
    Language,
    signature_at,
)

TREE_SITTER = "tree-sitter"
REGEX = "regex"


def engine_for(language: Language, engine: Engine = "auto") -> str:
    """The engine `extract` uses for `language`: "tree-sitter" or "regex"."""
    if engine == REGEX:
        return REGEX
    if ts_engine.available(language):
        return TREE_SITTER
    if engine == TREE_SITTER:
        raise LookupError(f"tree-sitter is not usable for {language}: {unavailable(language)}")
    return REGEX


def unavailable(language: Language) -> str:
    return ts_engine.unavailable().get(language, "not tried")


def describe_engines(engine: Engine = "auto") -> str:
    """One line: which engine serves which language (and why tree-sitter does not)."""
    languages: list[Language] = sorted(set(SUFFIXES.values()))
    parsed: list[Language] = [lang for lang in languages if engine_for(lang, engine) == TREE_SITTER]
    fallback: list[Language] = [lang for lang in languages if lang not in parsed]
    parts: list[str] = []
    if parsed:
        parts.append(f"tree-sitter {ts_engine.version()} ({', '.join(parsed)})")
    if fallback:
        why = "forced" if engine == REGEX else unavailable(fallback[0])
        parts.append(f"regex fallback ({', '.join(fallback)}; {why})")
    return "; ".join(parts)


def extract(
    text: str, language: Language, engine: Engine = "auto", *, key: str | None = None
) -> FileSymbols:
    """Definitions (with containers and signature lines) and identifier counts of one file."""
    used = engine_for(language, engine)
    if used == TREE_SITTER:
        if key is None:
            found = ts_engine.definitions(text, language)
        else:
            found = incremental.definitions(key, text, language)
    else:
        found = regex_engine.definitions(text, language)
    definitions = tuple(finish(found, text.split("\n"), language))
    return FileSymbols(language, used, definitions, identifier_counts(text, language))


def finish(found: list[Found], lines: list[str], language: Language) -> list[Definition]:
    """Sort by position, give each definition without a container the innermost definition that
    encloses it (a function directly inside a class-like one becomes a method), add signatures."""
    out: list[Definition] = []
    stack: list[Found] = []
    python = language == "python"
    for item in sorted(found, key=lambda f: (f.line, -f.end_line, f.name)):
        while stack and stack[-1].end_line < item.end_line:
            stack.pop()
        kind, container = item.kind, item.container
        if container is None and stack:
            parent = stack[-1]
            container = parent.name
            if kind == "function" and parent.kind in CLASS_LIKE:
                kind = "method"
        opener = ":" if python else None if kind == "type" else "{"
        signature = signature_at(lines, item.line, opener)
        out.append(Definition(item.name, kind, item.line, item.end_line, container, signature))
        stack.append(item._replace(kind=kind))
    return out
