"""Identifiers without a parser: one regex per language that skips comments, strings and numbers.

References are identifier occurrences; counting them is one `findall` pass over the text, and the
lines of one name are found again only when someone asks for them.
"""

from __future__ import annotations

import keyword
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator

from agent_lsp.symbols.model import Language

_PY_SKIP = (
    r"#[^\n]*"
    r"|[rRbBuUfF]{0,2}\"\"\"(?:[^\"\\]|\\[\s\S]|\"(?!\"\"))*(?:\"\"\"|\Z)"
    r"|[rRbBuUfF]{0,2}'''(?:[^'\\]|\\[\s\S]|'(?!''))*(?:'''|\Z)"
    r"|[rRbBuUfF]{0,2}\"(?:[^\"\\\n]|\\.)*\""
    r"|[rRbBuUfF]{0,2}'(?:[^'\\\n]|\\.)*'"
)
_C_COMMENTS = r"//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)"
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'"
_JS_SKIP = rf"{_C_COMMENTS}|{_QUOTED}|`(?:[^`\\]|\\[\s\S])*(?:`|\Z)"
_GO_SKIP = rf"{_C_COMMENTS}|{_QUOTED}|`[^`]*(?:`|\Z)"
_NUMBER = r"\d[\w.]*"
_WORD = r"[^\W\d][\w$]*"  # `$` is part of JS identifiers; harmless elsewhere

_SKIP: dict[Language, str] = {
    "python": _PY_SKIP,
    "javascript": _JS_SKIP,
    "typescript": _JS_SKIP,
    "tsx": _JS_SKIP,
    "go": _GO_SKIP,
}
# group 1 is an identifier; comments, strings and numbers match with an empty group 1
_TOKENS: dict[Language, re.Pattern[str]] = {
    lang: re.compile(rf"(?:{skip}|{_NUMBER})|({_WORD})", re.MULTILINE)
    for lang, skip in _SKIP.items()
}
_BLANKS: dict[Language, re.Pattern[str]] = {
    lang: re.compile(skip, re.MULTILINE) for lang, skip in _SKIP.items()
}

_JS_KEYWORDS = frozenset(
    "break case catch class const continue debugger default delete do else export extends "
    "finally for function if import in instanceof let new return super switch this throw try "
    "typeof var void while with yield async await of static get set null true false undefined "
    "from as".split()
)
_TS_KEYWORDS = _JS_KEYWORDS | frozenset(
    "interface type enum implements private protected public readonly declare abstract "
    "namespace module keyof infer is any unknown never string number boolean symbol bigint "
    "object override satisfies".split()
)
KEYWORDS: dict[Language, frozenset[str]] = {
    "python": frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | {"self"},
    "javascript": _JS_KEYWORDS,
    "typescript": _TS_KEYWORDS,
    "tsx": _TS_KEYWORDS,
    "go": frozenset(
        "break case chan const continue default defer else fallthrough for func go goto if "
        "import interface map package range return select struct switch type var nil true "
        "false iota".split()
    ),
}


def identifier_counts(text: str, language: Language) -> dict[str, int]:
    """How often each identifier occurs outside comments and strings (keywords left out)."""
    counts = Counter(_TOKENS[language].findall(text))
    counts.pop("", None)
    for word in KEYWORDS[language]:
        counts.pop(word, None)
    return dict(counts)


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


def blank(text: str, language: Language) -> str:
    """The text with comments and strings replaced by spaces, newlines and offsets kept."""
    return _BLANKS[language].sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def line_starts(text: str) -> list[int]:
    """Offsets where each line starts; `bisect_right(starts, offset)` is the 1-based line."""
    starts = [0]
    find = text.find
    at = find("\n")
    while at != -1:
        starts.append(at + 1)
        at = find("\n", at + 1)
    return starts
