"""Python definitions with a scanner: regular expressions over the text, a few calls per
definition, no parse tree.

One regex pass over the text replaces comments and strings (`_blank`); then every `def` and
`class` at a line start is a definition, and its body ends before the first line that holds code
at its indentation or less. The text is blanked so that nothing in a comment or a string is taken
for code, and newlines are kept, so that line numbers stay; lengths do not need to:

- a comment becomes `\\x02`: a comment line never ends a body; the comment lines after a
  body's last code are in it down to the first one indented less than its code (as
  tree-sitter counts them);
- a string becomes `"` (code: a string statement at the margin ends a body), and each line a
  string continues onto starts with `\\x01` (neither code at the margin nor blank: it never
  ends a body, and is in it).

A line that starts inside brackets or after a backslash continues the line before it and never
ends a body either; nor does a line that is itself a definition (brackets left open in code
being typed end there). On the CPython standard library this gives tree-sitter's definitions,
lines and end lines in 1,790 of its 1,791 files (the other is `test_compile.py`, code written
to trip parsers, where tree-sitter's error recovery loses a method), and in every file of
sympy, poetry and flask, several times faster (figures in `bench/symbols.md`).
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache

from agent_lsp.symbols.lexical import skip_pattern
from agent_lsp.symbols.model import Found

# a header's rest on its own line, brackets nested at most twice and balanced: most headers
_INNER = r"[^\n()\[\]{}]"
_NESTED = rf"(?:{_INNER}|\({_INNER}*\)|\[{_INNER}*\]|\{{{_INNER}*\}})*"
_ONE_LINE = rf"(?:{_INNER}|\({_NESTED}\)|\[{_NESTED}\]|\{{{_NESTED}\}})*+(?<!\\)(?=\n|\Z)"
_HEAD = rf"([ \t]*+)(?:async[ \t]+)?(def|class)[ \t]+([^\W\d]\w*)({_ONE_LINE})?"
_DEF = re.compile(rf"\n{_HEAD}")  # a literal first: searched far faster than `^` with re.M
_FIRST_DEF = re.compile(_HEAD)  # on the first line
_FIRST_CODE = re.compile(r"\n([ \t]*)[^ \t\n\x02]")
_DEF_START = re.compile(r"[ \t]*+(?:async[ \t]+)?(?:def|class)[ \t]")
_BRACKET_OR_NEWLINE = re.compile(r"[()\[\]{}\n]")
_BRACKETS = str.maketrans("[{]}", "(())")
_SKIP = skip_pattern("python")
SCAN_BUDGET = 32  # the bodies' scans may cover the text this many times (nesting is shallow)
HEADER_LINES = 50  # a header whose brackets stay open longer is taken to be its first line


def _blank(match: re.Match[str]) -> str:
    found = match.group()
    if found[0] == "#":
        return "\x02"
    newlines = found.count("\n")
    return '"' + "\n\x01" * newlines if newlines else '"'


def blank(text: str) -> str:
    """The text with comments and strings replaced as the module docstring says."""
    return _SKIP.sub(_blank, text)


@lru_cache(maxsize=256)
def _ender(width: int) -> re.Pattern[str]:
    """A newline followed by code indented `width` columns or less."""
    return re.compile(rf"\n(?=[ \t]{{0,{width}}}[^ \t\n\x01\x02])")


def definitions(text: str) -> tuple[list[Found], str]:
    """The definitions (containers and signatures are filled in later), and the blanked text
    (for identifier counts: nothing in it is a comment or a string any more)."""
    code = blank(text)
    matches = list(_DEF.finditer(code))
    if (first := _FIRST_DEF.match(code)) is not None:
        matches.insert(0, first)
    if not matches:
        return [], code
    size = len(code)
    count = code.count  # lines by the newlines since the last definition (they come in order)
    line = 1
    at = 0
    # every bracket as "(" or ")": one count each way tells whether one is left open
    counted = code.translate(_BRACKETS)
    budget = SCAN_BUDGET * size + (1 << 20)  # characters the bodies' scans may cover
    intern = sys.intern
    make = tuple.__new__  # a `Found` without its constructor's Python frame
    found: list[Found] = []
    for match in matches:
        indent, keyword, name, one_line = match.groups()
        start, width = match.start(1), len(indent)
        header = match.end() if one_line is not None else _header_end(code, match.end(), size)
        if budget > 0:
            stop = _body_stop(code, counted, header, width, size)
            budget -= stop - header
        else:  # a text made to be scanned over and over (thousands of nested bodies)
            stop = header
        last = _last_content(code, header, stop, width)
        line += count("\n", at, start)
        at = start
        end_line = line + count("\n", start, last - 1) if last > start else line
        kind = "function" if keyword == "def" else "class"
        found.append(make(Found, (intern(name), kind, line, max(line, end_line), None)))
    return found, code


def _body_stop(code: str, counted: str, header: int, width: int, size: int) -> int:
    """The offset of the newline before the first line after `header` that holds code
    indented `width` or less and continues no other line (the body's end), or `size`."""
    ender = _ender(width)
    at = header
    opened = 0  # brackets opened and not closed between `header` and `at`
    while (end := ender.search(code, at)) is not None:
        stop = end.start()
        opened += counted.count("(", at, stop) - counted.count(")", at, stop)
        # a definition never continues a line: brackets left open (code being typed) end there
        if (opened <= 0 and code[stop - 1] != "\\") or _DEF_START.match(code, stop + 1):
            return stop
        at = stop + 1  # a continuation line (inside brackets, after a backslash): on
    return size


def _header_end(code: str, pos: int, size: int) -> int:
    """The offset of the newline that ends a definition's header (its brackets closed; its
    first line when they are not closed within `HEADER_LINES` lines)."""
    eol = code.find("\n", pos)
    if eol < 0:
        eol = size
    count = code.count
    if (
        count("(", pos, eol) == count(")", pos, eol)
        and count("[", pos, eol) == count("]", pos, eol)
        and count("{", pos, eol) == count("}", pos, eol)
        and code[eol - 1] != "\\"
    ):
        return eol
    depth = 0
    lines = 0
    while (bracket := _BRACKET_OR_NEWLINE.search(code, pos)) is not None:
        char = bracket.group()
        if char == "\n":
            if depth <= 0 and code[bracket.start() - 1] != "\\":
                return bracket.start()
            lines += 1
            if lines > HEADER_LINES:  # brackets never closed: the header is its first line
                return eol
        elif char in "([{":
            depth += 1
        else:
            depth -= 1
        pos = bracket.end()
    return eol  # never closed before the end: the header is its first line


def _last_content(code: str, header: int, stop: int, width: int) -> int:
    """The end offset of a body's last content before `stop`: its last code (or string), then
    the comment lines after it down to the first one indented less than the body's code (as
    tree-sitter counts them; `width + 1` for a body on the header's line)."""
    begin = max(header, stop - 256)  # what is stripped is mostly a few blank lines
    end = begin + len(code[begin:stop].rstrip(" \t\n\x02"))
    if end == begin and begin > header:
        end = header + len(code[header:stop].rstrip(" \t\n\x02"))
    if end <= header:
        return end
    newline = code.find("\n", end, stop)
    if newline < 0 or code.find("\x02", newline, stop) < 0:
        return end  # no comment line after the last code
    first = _FIRST_CODE.search(code, header, end)
    needed = len(first.group(1)) if first is not None else width + 1
    last = end
    at = newline + 1
    while at < stop:
        line_end = code.find("\n", at, stop)
        if line_end < 0:
            line_end = stop
        line = code[at:line_end]
        text = line.lstrip(" \t")
        if text:  # a comment line: nothing but comments and blanks follow the last code
            if len(line) - len(text) < needed:
                break
            last = line_end
        at = line_end + 1
    return last
