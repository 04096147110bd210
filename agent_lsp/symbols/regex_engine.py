"""Definitions without tree-sitter: line patterns over the text with comments and strings blanked.

Python is `pyscan.py`'s (bodies end by indentation); JavaScript, TypeScript and Go bodies end
by matching braces, good enough for an index and a map where tree-sitter is not installed.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator

from agent_lsp.symbols import pyscan
from agent_lsp.symbols.lexical import blank, line_starts
from agent_lsp.symbols.model import Found, Language, go_receiver_type

_ID = r"[A-Za-z_$][\w$]*"
_EXPORT = r"^[ \t]*(?:export[ \t]+(?:default[ \t]+)?)?(?:declare[ \t]+)?"
_PARAMS = r"\([^()]*(?:\([^()]*\)[^()]*)*\)"
_JS_DEFS: list[tuple[str, re.Pattern[str]]] = [
    ("function", re.compile(rf"{_EXPORT}(?:async[ \t]+)?function\b[ \t]*\*?[ \t]*({_ID})", re.M)),
    ("class", re.compile(rf"{_EXPORT}(?:abstract[ \t]+)?class[ \t]+({_ID})", re.M)),
    (
        "function",
        re.compile(
            rf"^[ \t]*(?:export[ \t]+)?(?:const|let|var)[ \t]+({_ID})[ \t]*(?::[^=\n]+)?="
            rf"[ \t]*(?:async\b[ \t]*)?"
            rf"(?:function\b|(?:(?:<[^>\n]*>)?{_PARAMS}|{_ID})[ \t]*(?::[^=;{{]+)?=>)",
            re.M,
        ),
    ),
]
_TS_DEFS: list[tuple[str, re.Pattern[str]]] = [
    *_JS_DEFS,
    ("interface", re.compile(rf"{_EXPORT}interface[ \t]+({_ID})", re.M)),
    ("type", re.compile(rf"{_EXPORT}type[ \t]+({_ID})[^=\n;]*=", re.M)),
    ("enum", re.compile(rf"{_EXPORT}(?:const[ \t]+)?enum[ \t]+({_ID})", re.M)),
]
_MODIFIERS = "public|private|protected|static|async|readonly|override|abstract|declare|get|set"
_METHOD = re.compile(
    rf"^[ \t]*(?:(?:{_MODIFIERS})[ \t]+)*\*?[ \t]*(#?{_ID})[ \t]*(?:<[^>\n]*>)?[ \t]*\(", re.M
)
_NOT_METHODS = frozenset({"if", "for", "while", "switch", "catch", "function", "return", "with"})
_PY_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+([^\W\d]\w*)", re.M)
_GO_FUNC = re.compile(r"^func[ \t]+([^\W\d]\w*)", re.M)
_GO_METHOD = re.compile(r"^func[ \t]*\(([^)]*)\)[ \t]*([^\W\d]\w*)", re.M)
_GO_SPEC = r"([^\W\d]\w*)[ \t]*(?:\[[^\]\n]*\][ \t]*)?=?[ \t]*(struct|interface)?\b"
_GO_TYPE = re.compile(rf"^type[ \t]+{_GO_SPEC}", re.M)
_GO_TYPE_BLOCK = re.compile(r"^type[ \t]*\(", re.M)
_GO_BLOCK_SPEC = re.compile(rf"^[ \t]+{_GO_SPEC}", re.M)
_BRACKETS = re.compile(r"[()\[\]{}]")
_STOP = re.compile(r"[(\[{;\n]")
_BRACE = re.compile(r"\{")
_ANY_OPENER = re.compile(r"[(\[{]")
_BRACE_NEXT = re.compile(r"\s*\{")
_OPENERS = {")": "(", "]": "[", "}": "{"}


def definitions(text: str, language: Language) -> list[Found]:
    """What the patterns find (containers and signatures are filled in later)."""
    if language == "python":
        return pyscan.definitions(text)[0]
    source = _Source(blank(text, language))
    if language == "go":
        return source.go()
    return source.javascript(language != "javascript")


class _Source:
    """Blanked brace-language source with its bracket pairs, for finding where bodies end."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.starts = line_starts(code)
        self.pairs: dict[int, int] = {}
        stack: list[tuple[str, int]] = []
        for match in _BRACKETS.finditer(code):
            char, at = match.group(), match.start()
            if char in "([{":
                stack.append((char, at))
                continue
            opener = _OPENERS[char]
            while stack and stack[-1][0] != opener:
                stack.pop()
            if stack:
                self.pairs[stack.pop()[1]] = at

    def line(self, offset: int) -> int:
        return bisect_right(self.starts, offset)

    def body(self, pos: int, stop_at_newline: bool) -> tuple[int, int] | None:
        """The braces of the body that starts after `pos` (skipping bracketed groups), or None
        when the declaration ends first (`;`, or a newline in Go)."""
        while (match := _STOP.search(self.code, pos)) is not None:
            char, at = match.group(), match.start()
            if char == "{":
                close = self.pairs.get(at)
                return None if close is None else (at, close)
            if char == ";" or (char == "\n" and stop_at_newline):
                return None
            if char == "\n":
                pos = at + 1
                continue
            pos = self.pairs.get(at, at) + 1
        return None

    def make(self, name: str, kind: str, start: int, pos: int, go: bool = False) -> Found:
        braces = self.body(pos, stop_at_newline=go)
        end = braces[1] if braces is not None else pos
        return Found(name, kind, self.line(start), self.line(end))

    def top_level(self, start: int, end: int, opener: re.Pattern[str]) -> Iterator[tuple[int, int]]:
        """Spans of code[start:end] outside the bracketed groups `opener` finds; a span ends
        just after an opening parenthesis, so a call or signature still shows its `(`."""
        pos = start
        while (match := opener.search(self.code, pos, end)) is not None:
            at = match.start()
            yield pos, at + 1 if match.group() == "(" else at
            pos = self.pairs.get(at, end) + 1
        yield pos, end

    def javascript(self, typescript: bool) -> list[Found]:
        found: list[Found] = []
        for kind, pattern in _TS_DEFS if typescript else _JS_DEFS:
            for match in pattern.finditer(self.code):
                name, start, end = match.group(1), match.start(1), match.end()
                if self.code.endswith("=>", 0, end) and not _BRACE_NEXT.match(self.code, end):
                    # an expression body: taken to end on the arrow's line
                    found.append(Found(name, kind, self.line(start), self.line(end)))
                    continue
                found.append(self.make(name, kind, start, end))
                if kind in ("class", "interface"):
                    found.extend(self._members(match.end()))
        return found

    def _members(self, pos: int) -> Iterator[Found]:
        braces = self.body(pos, stop_at_newline=False)
        if braces is None:
            return
        for start, end in self.top_level(braces[0] + 1, braces[1], _ANY_OPENER):
            for match in _METHOD.finditer(self.code, start, end):
                if match.group(1) not in _NOT_METHODS:
                    yield self.make(match.group(1), "method", match.start(1), match.end() - 1)

    def go(self) -> list[Found]:
        code = self.code
        found = [
            self.make(m.group(1), "function", m.start(), m.end(), True)
            for m in _GO_FUNC.finditer(code)
        ]
        for match in _GO_METHOD.finditer(code):
            method = self.make(match.group(2), "method", match.start(), match.end(), True)
            found.append(method._replace(container=go_receiver_type(match.group(1))))
        for match in _GO_TYPE.finditer(code):
            found.append(self._go_type(match))
        for match in _GO_TYPE_BLOCK.finditer(code):
            close = self.pairs.get(match.end() - 1)
            if close is not None:
                for start, end in self.top_level(match.end(), close, _BRACE):
                    specs = _GO_BLOCK_SPEC.finditer(code, start, end)
                    found.extend(self._go_type(m) for m in specs)
        return found

    def _go_type(self, match: re.Match[str]) -> Found:
        kind = match.group(2) or "type"
        if kind == "type":
            return Found(match.group(1), kind, self.line(match.start(1)), self.line(match.end()))
        return self.make(match.group(1), kind, match.start(1), match.end(), True)
