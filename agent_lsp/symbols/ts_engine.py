"""Definitions with tree-sitter, when it and the language's grammar are installed.

Each grammar is loaded on first use; a missing package, an incompatible grammar or a query the
grammar rejects makes that language fall back to the regex engine (`unavailable()` says why).
Parsers are not thread-safe, so each thread gets its own.
"""

from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from agent_lsp.symbols.model import Found, Language, go_receiver_type

if TYPE_CHECKING:
    import tree_sitter

# (kind, pattern): each pattern captures the definition as @def and its name as @name
_PYTHON = [
    ("function", "(function_definition name: (identifier) @name) @def"),
    ("class", "(class_definition name: (identifier) @name) @def"),
]
_JS = [
    ("function", "(function_declaration name: (identifier) @name) @def"),
    ("function", "(generator_function_declaration name: (identifier) @name) @def"),
    ("class", "(class_declaration name: (_) @name) @def"),
    ("method", "(method_definition name: (_) @name) @def"),
    (
        "function",
        "(variable_declarator name: (identifier) @name"
        " value: [(arrow_function) (function_expression) (generator_function)]) @def",
    ),
]
_TS = [
    *_JS,
    ("class", "(abstract_class_declaration name: (_) @name) @def"),
    ("interface", "(interface_declaration name: (_) @name) @def"),
    ("type", "(type_alias_declaration name: (_) @name) @def"),
    ("enum", "(enum_declaration name: (_) @name) @def"),
    ("function", "(function_signature name: (_) @name) @def"),
    ("method", "(method_signature name: (_) @name) @def"),
    ("method", "(abstract_method_signature name: (_) @name) @def"),
]
_GO = [
    ("function", "(function_declaration name: (identifier) @name) @def"),
    (
        "method",
        "(method_declaration receiver: (parameter_list) @receiver"
        " name: (field_identifier) @name) @def",
    ),
    ("type", "(type_spec name: (type_identifier) @name type: (_) @body) @def"),
    ("type", "(type_alias name: (type_identifier) @name) @def"),
]
# language -> (module, function returning the grammar pointer, query)
_GRAMMARS: dict[Language, tuple[str, str, list[tuple[str, str]]]] = {
    "python": ("tree_sitter_python", "language", _PYTHON),
    "javascript": ("tree_sitter_javascript", "language", _JS),
    "typescript": ("tree_sitter_typescript", "language_typescript", _TS),
    "tsx": ("tree_sitter_typescript", "language_tsx", _TS),
    "go": ("tree_sitter_go", "language", _GO),
}
_GO_KINDS = {"struct_type": "struct", "interface_type": "interface"}


@dataclass(frozen=True, slots=True)
class _Grammar:
    language: tree_sitter.Language
    query: tree_sitter.Query
    kinds: tuple[str, ...]  # by pattern index


_problems: dict[Language, str] = {}
_local = threading.local()


@cache
def _grammar(language: Language) -> _Grammar | None:
    module_name, function, patterns = _GRAMMARS[language]
    try:
        import tree_sitter

        module = importlib.import_module(module_name)
        pointer: object = getattr(module, function)()
        lang = tree_sitter.Language(pointer)
        query = tree_sitter.Query(lang, "\n".join(pattern for _, pattern in patterns))
        return _Grammar(lang, query, tuple(kind for kind, _ in patterns))
    except Exception as exc:  # ImportError, an incompatible ABI, a query the grammar rejects
        _problems[language] = f"{type(exc).__name__}: {exc}"
        return None


def reset() -> None:
    """Forget loaded grammars and problems, so the next use imports again (for tests)."""
    _grammar.cache_clear()
    _problems.clear()
    _local.parsers = {}


def available(language: Language) -> bool:
    return _grammar(language) is not None


def unavailable() -> dict[Language, str]:
    """Why each language that was tried has no tree-sitter grammar."""
    return dict(_problems)


@cache
def version() -> str:
    try:
        from importlib.metadata import version as dist_version

        return dist_version("tree-sitter")
    except Exception:  # not installed, or no metadata
        return "?"


def _parser(language: Language, grammar: _Grammar) -> tree_sitter.Parser:
    parsers: dict[Language, tree_sitter.Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        import tree_sitter

        parser = parsers[language] = tree_sitter.Parser(grammar.language)
    return parser


def definitions(text: str, language: Language) -> list[Found]:
    """The definitions tree-sitter finds (containers and signatures are filled in later); raises
    `LookupError` when the language has no grammar."""
    return definitions_in(text.encode("utf-8", "replace"), language)[0]


def definitions_in(
    data: bytes, language: Language, old: tree_sitter.Tree | None = None
) -> tuple[list[Found], tree_sitter.Tree]:
    """`definitions` of the UTF-8 `data`, and its tree; with `old` (the tree of the previous
    text, already `edit()`ed to match `data`) the parse reuses what did not change."""
    grammar = _grammar(language)
    if grammar is None:
        raise LookupError(f"no tree-sitter grammar for {language}: {_problems.get(language)}")
    import tree_sitter

    parser = _parser(language, grammar)
    tree = parser.parse(data) if old is None else parser.parse(data, old)
    found: list[Found] = []
    kinds = grammar.kinds
    for pattern, captures in tree_sitter.QueryCursor(grammar.query).matches(tree.root_node):
        kind = kinds[pattern]
        node = captures["def"][0]
        container = None
        if "receiver" in captures:
            receiver = captures["receiver"][0].text or b""
            container = go_receiver_type(receiver.decode("utf-8", "replace"))
        elif "body" in captures:
            kind = _GO_KINDS.get(captures["body"][0].type, "type")
        start, (end_row, end_col) = node.start_point.row, node.end_point
        found.append(
            Found(
                sys.intern((captures["name"][0].text or b"").decode("utf-8", "replace")),
                kind,
                start + 1,
                max(start + 1, end_row + 1 if end_col else end_row),
                container,
            )
        )
    return found, tree


def parse(text: str, language: Language) -> tree_sitter.Node | None:
    """The syntax tree of `text`, or None when the language has no grammar."""
    grammar = _grammar(language)
    if grammar is None:
        return None
    return _parser(language, grammar).parse(text.encode("utf-8", "replace")).root_node
