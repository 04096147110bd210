"""Per-file symbols: definitions (scanned, parsed, or the regex fallback) and identifier references.

`extract(text, language)` scans Python (`pyscan.py`) and picks tree-sitter for the other
languages when it and the grammar are importable; pass `engine="regex"` to force the regex
engine everywhere, `engine="tree-sitter"` to require the parser (Python included). With a
`key` (a disk file's path: `disk.index_disk_file` passes it), tree-sitter re-parses a file it
parsed lately incrementally (`incremental.py`): the same symbols, for a fraction of the parse.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_lsp.symbols import incremental, pyscan, regex_engine, ts_engine
from agent_lsp.symbols.lexical import code_identifier_counts, identifier_counts
from agent_lsp.symbols.model import (
    CLASS_LIKE,
    SUFFIXES,
    Engine,
    FileSymbols,
    Found,
    Language,
    Row,
    definitions_from_rows,
    signature_at,
)

TREE_SITTER = "tree-sitter"
REGEX = "regex"
SCANNED: frozenset[Language] = frozenset({"python"})  # the regex engine's own, by default


def engine_for(language: Language, engine: Engine = "auto") -> str:
    """The engine `extract` uses for `language`: "tree-sitter" or "regex". Python is scanned
    (`pyscan.py`, the regex engine's Python) unless tree-sitter is asked for: the scanner
    finds what tree-sitter finds in about a quarter of the time (see `bench/symbols.md`)."""
    if engine == REGEX:
        return REGEX
    if engine == "auto" and language in SCANNED:
        return REGEX
    if ts_engine.available(language):
        return TREE_SITTER
    if engine == TREE_SITTER:
        raise LookupError(f"tree-sitter is not usable for {language}: {unavailable(language)}")
    return REGEX


def unavailable(language: Language) -> str:
    return ts_engine.unavailable().get(language, "not tried")


def describe_engines(engine: Engine = "auto", languages: Iterable[Language] | None = None) -> str:
    """One line: which engine serves which language (default: every one; the others are not
    looked at: no grammar is loaded for them), and why tree-sitter does not."""
    languages = sorted(set(SUFFIXES.values()) if languages is None else set(languages))
    parsed: list[Language] = [lang for lang in languages if engine_for(lang, engine) == TREE_SITTER]
    scanned: list[Language] = [lang for lang in languages if lang in SCANNED and lang not in parsed]
    fallback: list[Language] = [lang for lang in languages if lang not in {*parsed, *scanned}]
    parts: list[str] = []
    if parsed:
        parts.append(f"tree-sitter {ts_engine.version()} ({', '.join(parsed)})")
    if scanned:
        parts.append(f"scanner ({', '.join(scanned)})")
    if fallback:
        why = "forced" if engine == REGEX else unavailable(fallback[0])
        parts.append(f"regex fallback ({', '.join(fallback)}; {why})")
    return "; ".join(parts)


def extract(
    text: str, language: Language, engine: Engine = "auto", *, key: str | None = None
) -> FileSymbols:
    """Definitions (with containers and signature lines) and identifier counts of one file."""
    used, rows, counts = extract_rows(text, language, engine, key=key)
    return FileSymbols(language, used, definitions_from_rows(rows), counts)


def extract_rows(
    text: str,
    language: Language,
    engine: Engine = "auto",
    *,
    key: str | None = None,
    interned: bool = True,
) -> tuple[str, list[Row], dict[str, int]]:
    """What `extract` finds as plain values: the engine used, the definitions' rows (a
    `Definition`'s fields, in order) and the identifier counts (their names interned unless
    `interned` is False, where they cross a pipe: the receiver interns them)."""
    used = engine_for(language, engine)
    code: str | None = None  # the text with comments and strings blanked, if an engine made it
    if used == TREE_SITTER:
        if key is None:
            found = ts_engine.definitions(text, language)
        else:
            found = incremental.definitions(key, text, language)
    elif language == "python":
        found, code = pyscan.definitions(text)  # in order already
    else:
        found = regex_engine.definitions(text, language)
    rows = finish(found, text.split("\n"), language, ordered=code is not None)
    counts = (
        identifier_counts(text, language)
        if code is None
        else code_identifier_counts(code, language, interned=interned)
    )
    return used, rows, counts


def finish(
    found: list[Found], lines: list[str], language: Language, *, ordered: bool = False
) -> list[Row]:
    """Sort by position (unless `ordered`: by line, one per line), give each definition without
    a container the innermost definition that encloses it (a function directly inside a
    class-like one becomes a method), add signatures: the definitions' rows."""
    out: list[Row] = []
    stack: list[tuple[str, str, int]] = []  # name, kind, end line
    python = language == "python"
    if not ordered:
        found = sorted(found, key=lambda f: (f.line, -f.end_line, f.name))
    for name, kind, line, end_line, container in found:
        while stack and stack[-1][2] < end_line:
            stack.pop()
        if container is None and stack:
            parent = stack[-1]
            container = parent[0]
            if kind == "function" and parent[1] in CLASS_LIKE:
                kind = "method"
        opener = ":" if python else None if kind == "type" else "{"
        out.append((name, kind, line, end_line, container, signature_at(lines, line, opener)))
        stack.append((name, kind, end_line))
    return out
