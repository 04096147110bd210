"""The values the bash parser produces: words (with what is known of their expansion),
redirections and simple commands; plus the character checks done before parsing."""

from __future__ import annotations

import glob
import re
import unicodedata
from dataclasses import dataclass, field

__all__ = [
    "UNKNOWN",
    "Command",
    "ParseAbort",
    "Redirect",
    "Script",
    "Word",
    "WordBuilder",
    "decode_ansi_c",
    "suspicious_char",
]

UNKNOWN = "\x00"  # stands for the unknown part of an expanded word
_ALLOWED_CONTROLS = frozenset("\t\n")
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)")


class ParseAbort(Exception):
    """The parser met something it cannot decide; the message says what."""


def suspicious_char(text: str) -> str | None:
    """The first character a reader could not see or would misread: control characters other
    than tab and newline (`\\r` included), format characters (zero-width, bidi overrides, BOM),
    unusual spaces and private-use or unassigned code points."""
    for ch in text:
        if ch in _ALLOWED_CONTROLS or (" " <= ch <= "~"):
            continue
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"):
            return f"U+{ord(ch):04X} ({unicodedata.name(ch, cat)})"
    return None


def decode_ansi_c(body: str) -> str:
    """The value of a `$'...'` string."""

    def one(match: re.Match[str]) -> str:
        esc = match.group(1)
        if esc[0] in "xuU" and len(esc) > 1:
            return chr(int(esc[1:], 16)) if int(esc[1:], 16) < 0x110000 else ""
        if esc[0] in "01234567":
            return chr(int(esc, 8) & 0xFF)
        if esc[0] == "c" and len(esc) == 2:
            return chr(ord(esc[1].upper()) ^ 0x40)
        return _ANSI_SIMPLE.get(esc, "\\" + esc)

    return _ANSI.sub(one, body)


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal. `value` has known expansions applied (`~`, `$HOME`)
    and `UNKNOWN` where a value cannot be known before running (variables, `$(...)`)."""

    raw: str
    value: str
    dynamic: bool = False
    glob: bool = False  # unquoted * ? [...]
    brace: bool = False  # unquoted {a,b} or {1..3}
    pattern: str = ""  # for glob expansion: quoted glob characters escaped
    procsub: bool = False  # <(...) or >(...): a /dev/fd path
    variable: bool = False  # the unknown part includes a variable (may hold a secret)
    pwd: bool = False  # `$PWD` or `~+` was expanded (with the folder at parse time)

    @property
    def static(self) -> bool:
        return not self.dynamic and not self.glob and not self.brace


@dataclass(frozen=True)
class Redirect:
    op: str  # > >> >| < <> &> &>> >& <& << <<- <<<
    fd: int | None
    target: Word | None
    body: list[str] = field(default_factory=list[str])  # a here-document's text, once read

    @property
    def heredoc(self) -> bool:
        return self.op in ("<<", "<<-")


@dataclass
class Command:
    """A simple command; `context` says where it sits (top, $(), ``, <(), subshell ...)."""

    words: list[Word] = field(default_factory=list[Word])
    assigns: list[tuple[str, Word]] = field(default_factory=list[tuple[str, Word]])
    redirects: list[Redirect] = field(default_factory=list[Redirect])
    depth: int = 0
    context: str = "top"
    pipeline: int = 0
    before: str = ""  # the operator before it: "", ";", "\n", "&&", "||", "|", "|&", "&"
    after: str = ""  # the operator after it ("" at the end of a list)
    compound: int = 0  # inside how many { }, if, while, until, for bodies (of its subshell)
    scope: tuple[int, ...] = ()  # the subshells it runs in: ( ), $( ), ` `, <( )

    @property
    def argv(self) -> list[str]:
        return [w.value for w in self.words]


@dataclass
class Script:
    commands: list[Command]
    problems: list[str]

    @property
    def decidable(self) -> bool:
        return not self.problems


class WordBuilder:
    """Collects a word's characters with their quoting."""

    def __init__(self) -> None:
        self.raw_start = 0
        self.value: list[str] = []
        self.pattern: list[str] = []
        self.unquoted: list[str] = []  # unquoted text only, other characters as "\x01"
        self.dynamic = False
        self.variable = False
        self.pwd = False

    def add(self, text: str, quoted: bool) -> None:
        self.value.append(text)
        if quoted:
            self.pattern.append("".join(glob.escape(c) if c in "*?[" else c for c in text))
            self.unquoted.append("\x01" * len(text))
        else:
            self.pattern.append(text)
            self.unquoted.append(text)

    def add_unknown(self, variable: bool) -> None:
        self.dynamic = True
        self.variable = self.variable or variable
        self.value.append(UNKNOWN)
        self.pattern.append(UNKNOWN)
        self.unquoted.append("\x01")

    @property
    def empty(self) -> bool:
        return not self.value

    def build(self, raw: str, procsub: bool = False) -> Word:
        plain = "".join(self.unquoted)
        has_glob = bool(re.search(r"[*?]|\[[^\]]+\]", plain))
        has_brace = bool(re.search(r"(?<!\$)\{[^{}]*(,|\.\.)[^{}]*\}", plain))
        return Word(
            raw=raw,
            value="".join(self.value),
            dynamic=self.dynamic,
            glob=has_glob,
            brace=has_brace,
            pattern="".join(self.pattern),
            procsub=procsub,
            variable=self.variable,
            pwd=self.pwd,
        )
