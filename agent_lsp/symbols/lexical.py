"""Identifiers without a parser: per language, one regex for comments and strings.

References are identifier occurrences outside comments and strings. Counting them per file is
cheap (strip comments/strings, split the bytes on non-word characters); the lines of one name are
found again only when someone asks for them.
"""

from __future__ import annotations

import keyword
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from sys import intern

from agent_lsp.symbols.model import Language

# String prefixes (f"", rb'') are left out on purpose: a letter class in front of the quote
# makes the scan several times slower; the prefix then counts as a one-letter identifier.
_PY_SKIP = (
    r"#[^\n]*"
    r'|"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*(?:"""|\Z)'
    r"|'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*(?:'''|\Z)"
    r'|"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"'  # a backslash may escape a newline too
    r"|'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*'"
)
_C_COMMENTS = r"//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)"
_QUOTED = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"' r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"
_JS_SKIP = rf"{_C_COMMENTS}|{_QUOTED}|`[^`\\]*(?:\\[\s\S][^`\\]*)*(?:`|\Z)"
_GO_SKIP = rf"{_C_COMMENTS}|{_QUOTED}|`[^`]*(?:`|\Z)"

_JS_FAMILY: frozenset[Language] = frozenset({"javascript", "typescript", "tsx"})
_SKIP_SOURCE: dict[Language, str] = {
    "python": _PY_SKIP,
    "javascript": _JS_SKIP,
    "typescript": _JS_SKIP,
    "tsx": _JS_SKIP,
    "go": _GO_SKIP,
}
_SKIP = {lang: re.compile(src) for lang, src in _SKIP_SOURCE.items()}
# group 1 is an identifier; comments, strings and numbers match with an empty group 1
_TOKENS = {
    lang: re.compile(
        rf"(?:{src}|\d[\w.]*)|([^\W\d][\w$]*)"
        if lang in _JS_FAMILY
        else rf"(?:{src}|\d[\w.]*)|([^\W\d]\w*)"
    )
    for lang, src in _SKIP_SOURCE.items()
}


def _word_table(extra: bytes) -> bytes:
    word = b"0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" + extra
    return bytes(c if c in word or c >= 0x80 else 0x20 for c in range(256))


_PLAIN_WORDS = _word_table(b"")
_JS_WORDS = _word_table(b"$")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_JS_KEYWORDS = _words(
    "break case catch class const continue debugger default delete do else export extends "
    "finally for function if import in instanceof let new return super switch this throw try "
    "typeof var void while with yield async await of static get set null true false undefined "
    "from as"
)
_TS_KEYWORDS = _JS_KEYWORDS | _words(
    "interface type enum implements private protected public readonly declare abstract "
    "namespace module keyof infer is any unknown never string number boolean symbol bigint "
    "object override satisfies"
)
KEYWORDS: dict[Language, frozenset[str]] = {
    "python": frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"self"},
    "javascript": _JS_KEYWORDS,
    "typescript": _TS_KEYWORDS,
    "tsx": _TS_KEYWORDS,
    "go": _words(
        "break case chan const continue default defer else fallthrough for func go goto if "
        "import interface map package range return select struct switch type var nil true "
        "false iota"
    ),
}


def skip_pattern(language: Language) -> re.Pattern[str]:
    """The regex that matches the comments and strings of `language`."""
    return _SKIP[language]


def identifier_counts(text: str, language: Language) -> dict[str, int]:
    """How often each identifier occurs outside comments and strings (keywords left out)."""
    return code_identifier_counts(_SKIP[language].sub(" ", text), language)


def code_identifier_counts(
    code: str, language: Language, *, interned: bool = True
) -> dict[str, int]:
    """`identifier_counts` of a text whose comments and strings are replaced already (by
    characters that are not word characters; newlines may stay); `interned=False` leaves the
    names as they are (for counts that cross a pipe: the receiver interns them)."""
    keep = intern if interned else str
    data = code.encode("utf-8", "replace")
    table = _JS_WORDS if language in _JS_FAMILY else _PLAIN_WORDS
    keywords = KEYWORDS[language]
    counts: dict[str, int] = {}
    for raw, count in Counter(data.translate(table).split()).items():
        if not raw[:1].isdigit():
            name = raw.decode("utf-8", "replace")
            if name not in keywords:
                counts[keep(name)] = count
    return counts


def iter_references(text: str, language: Language) -> Iterator[tuple[str, int]]:
    """Every identifier occurrence as (name, 1-based line)."""
    starts = line_starts(text)
    keywords = KEYWORDS[language]
    for match in _TOKENS[language].finditer(text):
        name = match.group(1)
        if name and name not in keywords:
            yield name, bisect_right(starts, match.start())


def reference_lines(text: str, language: Language, name: str) -> Iterator[int]:
    """The 1-based lines where `name` occurs as an identifier, each line once."""
    if name not in text:
        return
    starts = line_starts(text)
    last = 0
    for match in _TOKENS[language].finditer(text):
        if match.group(1) == name:
            line = bisect_right(starts, match.start())
            if line != last:
                last = line
                yield line


def _blank_match(match: re.Match[str]) -> str:
    found = match.group()
    newlines = found.count("\n")
    if not newlines:
        return " " * len(found)
    return "\n" * newlines + " " * (len(found) - found.rfind("\n") - 1)


def blank(text: str, language: Language) -> str:
    """The text with comments and strings blanked: line numbers, and the columns of every line
    that holds code, stay as they were."""
    return _SKIP[language].sub(_blank_match, text)


def line_starts(text: str) -> list[int]:
    """Offsets where each line starts; `bisect_right(starts, offset)` is the 1-based line."""
    starts = [0]
    find = text.find
    at = find("\n")
    while at != -1:
        starts.append(at + 1)
        at = find("\n", at + 1)
    return starts
