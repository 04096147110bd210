"""The values of the symbol index: languages, definitions, a file's symbols."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import PurePath
from typing import Literal, NamedTuple

Language = Literal["python", "javascript", "typescript", "tsx", "go"]
Engine = Literal["auto", "tree-sitter", "regex"]

SUFFIXES: dict[str, Language] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
}

# Kinds: function, method, class, interface, struct, type, enum.
CLASS_LIKE = frozenset({"class", "interface", "struct", "enum"})
SIGNATURE_MAX = 160


def language_for(path: PurePath | str) -> Language | None:
    """The language of a file by its suffix, or None when it is not indexed."""
    name = path.name if isinstance(path, PurePath) else PurePath(path).name
    dot = name.rfind(".")
    return SUFFIXES.get(name[dot:].lower()) if dot > 0 else None


@dataclass(frozen=True, slots=True)
class Definition:
    """One definition in a file; lines are 1-based, `container` is the enclosing definition
    (the class of a method, the receiver type of a Go method)."""

    name: str
    kind: str
    line: int
    end_line: int
    container: str | None = None
    signature: str = ""

    @property
    def qualified_name(self) -> str:
        return f"{self.container}.{self.name}" if self.container else self.name


class Found(NamedTuple):
    """A definition as an engine finds it, before containers and signatures are added."""

    name: str
    kind: str
    line: int
    end_line: int
    container: str | None = None


@dataclass(frozen=True, slots=True)
class FileSymbols:
    """What one file defines, and how often each identifier occurs in it (its references)."""

    language: Language
    engine: str
    definitions: Sequence[Definition] = ()  # a tuple, or `packed.Definitions` from the cache
    identifiers: Mapping[str, int] = field(default_factory=dict[str, int])


_SPACE = re.compile(r"\s+")
_WRAPPED_OPEN = re.compile(r"([(\[{]) ")
_WRAPPED_CLOSE = re.compile(r",? ([)\]}])")
_HEADER_CHARS = re.compile(r"[()\[\]{}:]")
_RECEIVER_TYPE = re.compile(r"(\w+)\s*(?:\[[^\]]*\])?\s*\)?\s*$")


def go_receiver_type(receiver: str) -> str | None:
    """The type name of a Go method receiver such as `(s *Stack[T])`."""
    match = _RECEIVER_TYPE.search(receiver)
    return match.group(1) if match else None


def signature_at(lines: list[str], line: int, body_opener: str | None) -> str:
    """The header of the definition starting at 1-based `line`: joined until its brackets close,
    cut where the body opens (`body_opener` at bracket depth 0: ":" for Python, "{" for brace
    languages, None to keep the whole statement), whitespace collapsed, capped in length."""
    if body_opener is not None and 0 < line <= len(lines):
        quick = _one_line_signature(lines[line - 1], body_opener)
        if quick is not None:
            return quick
    parts: list[str] = []
    depth = 0
    for text in lines[line - 1 : line + 7]:
        cut = None
        for match in _HEADER_CHARS.finditer(text):
            char = match.group()
            if char == body_opener and depth == 0:
                cut = match.start()
                break
            if char in "([{":
                depth += 1
            elif char != ":":
                depth -= 1
        parts.append(text[:cut].strip())
        if cut is not None or depth <= 0:
            break
    header = _SPACE.sub(" ", " ".join(parts)).strip().rstrip(";").rstrip()
    if len(parts) > 1:  # undo the layout of a wrapped header: "f( a, b, )" -> "f(a, b)"
        header = _WRAPPED_CLOSE.sub(r"\1", _WRAPPED_OPEN.sub(r"\1", header))
    if len(header) > SIGNATURE_MAX:
        header = header[: SIGNATURE_MAX - 1] + "…"
    return header


# a header whose brackets hold no brackets, up to the first `:` (or `{`) outside them
_SIMPLE_HEADERS = {
    ":": re.compile(r"[^()\[\]{}:]*(?:\([^()\[\]{}]*\)[^()\[\]{}:]*)*:"),
    "{": re.compile(r"[^()\[\]{}]*(?:\([^()\[\]{}]*\)[^()\[\]{}]*)*\{"),
}


def _one_line_signature(text: str, body_opener: str) -> str | None:
    """`signature_at` of a header whose body opens on its first line, with nothing to collapse
    (most headers); None when the long way is needed. The body opens at the first `body_opener`
    before which the brackets balance: where `signature_at`'s depth (opened less closed, of any
    kind) is 0."""
    simple = _SIMPLE_HEADERS.get(body_opener)
    if simple is not None and (match := simple.match(text)) is not None:
        # no bracket left open before it, and no earlier `body_opener`
        return _cut_header(text[: match.end() - 1])
    count = text.count
    at = text.find(body_opener)
    while at >= 0:
        opened = count("(", 0, at) + count("[", 0, at) + count("{", 0, at)
        if opened == count(")", 0, at) + count("]", 0, at) + count("}", 0, at):
            return _cut_header(text[:at])
        at = text.find(body_opener, at + 1)
    return None


def _cut_header(head: str) -> str | None:
    """`signature_at`'s header from a one-line `head`; None when it has whitespace to collapse."""
    header = head.strip()
    if "  " in header or not header.isprintable():
        return None
    header = header.rstrip(";").rstrip()
    if len(header) > SIGNATURE_MAX:
        header = header[: SIGNATURE_MAX - 1] + "…"
    return header


Row = tuple[str, str, int, int, str | None, str]  # a Definition's fields, in order


def definitions_from_rows(rows: Iterable[Row]) -> tuple[Definition, ...]:
    """Definitions from their rows, through the slot descriptors (faster than the frozen
    dataclass's constructor; the same objects)."""
    new = object.__new__
    set_name, set_kind, set_line, set_end, set_container, set_signature = _SETTERS
    built: list[Definition] = []
    for name, kind, line, end_line, container, signature in rows:
        d = new(Definition)
        set_name(d, name)
        set_kind(d, kind)
        set_line(d, line)
        set_end(d, end_line)
        set_container(d, container)
        set_signature(d, signature)
        built.append(d)
    return tuple(built)


_SETTERS = [getattr(Definition, f.name).__set__ for f in fields(Definition)]
