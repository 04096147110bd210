"""A sed script read the way GNU sed reads it, for what it may do beyond printing: `e` and the
`e` flag of `s` run commands, `w`/`W` and the `w` flag write files, `r`/`R` read them. Pure:
`effects` lists them; a script it cannot follow is `("unknown", why)`."""

from __future__ import annotations

__all__ = ["effects"]

_PLAIN = frozenset("=dDgGhHnNpPxzF")
_NUMBER_ARG = frozenset("lqQ")
_LABEL = frozenset(":btT")
_TEXT = frozenset("aic")
_FILES = {"r": "read", "R": "read", "w": "write", "W": "write"}
_S_FLAGS = frozenset("gpiImM0123456789")


class _Stop(Exception):
    pass


class _Reader:
    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0
        self.out: list[tuple[str, str]] = []

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def skip_blanks(self) -> None:
        while self.peek() in (" ", "\t") and self.peek():
            self.i += 1

    def rest_of_line(self) -> str:
        end = self.s.find("\n", self.i)
        end = len(self.s) if end < 0 else end
        text = self.s[self.i : end]
        self.i = end
        return text

    def delimited(self, delim: str) -> str:
        """Text up to an unescaped `delim` (GNU: brackets are not special), consumed."""
        out: list[str] = []
        while True:
            c = self.peek()
            if not c:
                raise _Stop("unterminated s, y or address")
            if c == "\\":
                out.append(self.s[self.i : self.i + 2])
                self.i += 2
                continue
            self.i += 1
            if c == delim:
                text = "".join(out)
                if delim != "]" and "[" in text and _bracket_hides(self.s, delim):
                    self.out.append(("undecidable", "a bracket holds the delimiter"))
                return text
            if c == "\n" and delim != "\n":
                raise _Stop("newline inside a regular expression")
            out.append(c)


def _bracket_hides(script: str, delim: str) -> bool:
    """Whether a `[...]` could hold the delimiter (POSIX seds read that differently)."""
    depth = False
    for c in script:
        if c == "[":
            depth = True
        elif c == "]":
            depth = False
        elif c == delim and depth:
            return True
    return False


def effects(script: str) -> list[tuple[str, str]]:
    """("exec" | "read" | "write" | "undecidable" | "unknown", detail) for each effect."""
    r = _Reader(script)
    try:
        _commands(r)
    except _Stop as stop:
        r.out.append(("unknown", str(stop)))
    return r.out


def _address(r: _Reader) -> None:
    c = r.peek()
    if c.isdigit():
        while r.peek().isdigit():
            r.i += 1
        if r.peek() == "~":
            r.i += 1
            while r.peek().isdigit():
                r.i += 1
    elif c == "$":
        r.i += 1
    elif c in ("/", "\\"):
        r.i += 1
        delim = "/"
        if c == "\\":
            delim = r.peek()
            r.i += 1
        r.delimited(delim)
        while r.peek() in ("I", "M") and r.peek():
            r.i += 1


def _commands(r: _Reader) -> None:
    while r.i < len(r.s):
        r.skip_blanks()
        c = r.peek()
        if c in ("\n", ";", "}") or c == "":
            r.i += 1
            continue
        if c == "#":
            r.rest_of_line()
            continue
        _address(r)
        r.skip_blanks()
        if r.peek() == ",":
            r.i += 1
            r.skip_blanks()
            if r.peek() in ("+", "~"):
                r.i += 1
                while r.peek().isdigit():
                    r.i += 1
            else:
                _address(r)
        r.skip_blanks()
        while r.peek() == "!":
            r.i += 1
            r.skip_blanks()
        _command(r)


def _command(r: _Reader) -> None:
    c = r.peek()
    r.i += 1
    if c == "{":
        return
    if c in _PLAIN:
        return
    if c in _NUMBER_ARG:
        r.skip_blanks()
        while r.peek().isdigit():
            r.i += 1
        return
    if c in _LABEL:
        while r.peek() and r.peek() not in ";\n":
            r.i += 1
        return
    if c in _TEXT:
        r.rest_of_line()
        return
    if c in _FILES:
        r.skip_blanks()
        r.out.append((_FILES[c], r.rest_of_line()))
        return
    if c == "e":
        r.out.append(("exec", r.rest_of_line().strip() or "the pattern space"))
        return
    if c == "v":
        while r.peek() and r.peek() not in ";\n}":
            r.i += 1
        return
    if c in ("s", "y"):
        delim = r.peek()
        if delim in ("", "\n", "\\"):
            raise _Stop(f"{c} without a delimiter")
        r.i += 1
        r.delimited(delim)
        r.delimited(delim)
        if c == "s":
            _s_flags(r)
        return
    raise _Stop(f"the sed command {c!r} is not known to be safe")


def _s_flags(r: _Reader) -> None:
    while True:
        c = r.peek()
        if c in _S_FLAGS and c:
            r.i += 1
        elif c == "e":
            r.i += 1
            r.out.append(("exec", "the pattern space (s///e)"))
        elif c == "w":
            r.i += 1
            r.skip_blanks()
            r.out.append(("write", r.rest_of_line()))
            return
        elif c in ("", "\n", ";", "}", " ", "\t", "#"):
            return
        else:
            raise _Stop(f"the s flag {c!r} is not known to be safe")
