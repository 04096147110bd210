"""The values of the symbol index: languages, definitions, a file's symbols."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Literal

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
    return SUFFIXES.get(PurePath(path).suffix.lower())


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


@dataclass(frozen=True, slots=True)
class FileSymbols:
    """What one file defines, and how often each identifier occurs in it (its references)."""

    language: Language
    engine: str
    definitions: tuple[Definition, ...] = ()
    identifiers: Mapping[str, int] = field(default_factory=dict[str, int])


_SPACE = re.compile(r"\s+")


def signature_at(lines: list[str], line: int) -> str:
    """The header of the definition starting at 1-based `line`: joined until its brackets close,
    whitespace collapsed, the trailing `:` / `{` dropped, capped in length."""
    parts: list[str] = []
    depth = 0
    for text in lines[line - 1 : line + 7]:
        parts.append(text.strip())
        depth += sum(text.count(c) for c in "([") - sum(text.count(c) for c in ")]")
        if depth <= 0:
            break
    header = _SPACE.sub(" ", " ".join(parts)).strip()
    header = header.removesuffix("{").rstrip().removesuffix(":").rstrip()
    if len(header) > SIGNATURE_MAX:
        header = header[: SIGNATURE_MAX - 1] + "…"
    return header
