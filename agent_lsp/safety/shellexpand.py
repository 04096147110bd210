"""Expansions inside a word: `$name`, `${...}`, `$(...)`, `$((...))`, backticks and double
quotes. Command substitutions are parsed (their commands are classified like any other);
values that cannot be known before running make the word dynamic.

Arithmetic that names a variable (`$((x))`, `${a[i]}`, `${s:i}`, `${!x}`) is undecidable:
bash evaluates a variable's value as an expression, and a subscript in it runs `$(...)`.
Expansions that assign (`${X:=v}`) are undecidable too. In the `dash` dialect (`sh -c`),
whatever bash and dash read differently is undecidable."""

from __future__ import annotations

import re
from typing import Protocol

from agent_lsp.safety.shellwords import ParseAbort, Word, WordBuilder, decode_ansi_c

__all__ = [
    "Lexer",
    "LexerContext",
    "backtick",
    "dollar",
    "double_quoted",
    "lex_word",
    "scan_substitutions",
]

_META = frozenset(" \t\n;&|<>()")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARITH_SAFE = re.compile(r"[0-9\s+\-*/%()<>=!&|^~?:,]*")
_HEAD = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[([^\]]*)\])?")
_SUBSTRING = re.compile(r":\s*-?[0-9]+(:\s*-?[0-9]+)?")


class LexerContext(Protocol):
    home: str
    pwd: str
    dialect: str  # "bash" or "dash"

    def problem(self, text: str) -> None: ...


class Lexer(Protocol):
    """What the word lexer needs of the parser (`shellparse.Parser`)."""

    s: str
    i: int

    @property
    def ctx(self) -> LexerContext: ...

    def sub_list(self, close: str, context: str) -> None: ...

    def sub_text(self, text: str, context: str) -> None: ...

    def spawn(self, text: str, context: str) -> Lexer: ...


def _param_ok(body: str, dialect: str) -> bool:
    """Whether `${body}` neither assigns nor evaluates arithmetic (nor means something else to
    dash); the word after an operator is scanned on its own."""
    m = _HEAD.match(body)
    if m is None:
        return False  # ${!x} (indirection) and anything unusual
    length, sub, rest = m.group(1), m.group(4), body[m.end() :]
    if sub is not None and (dialect == "dash" or not re.fullmatch(r"[0-9]+|[@*]", sub)):
        return False
    if length or not rest:
        return not rest
    if rest.startswith((":=", "=")):
        return False
    if rest.startswith((":-", ":?", ":+", "-", "?", "+", "#", "%")):
        return True
    if dialect == "dash":
        return False
    if rest.startswith(("/", "^", ",", "@")):
        return True
    return bool(_SUBSTRING.fullmatch(rest))


def dollar(p: Lexer, b: WordBuilder, quoted: bool) -> None:
    s, i = p.s, p.i
    nxt = s[i + 1] if i + 1 < len(s) else ""
    if s.startswith("$((", i):
        end = _arith_end(s, i + 3)
        if end < 0:
            raise ParseAbort("unterminated $((")
        body = s[i + 3 : end - 2]
        p.i = end
        if _ARITH_SAFE.fullmatch(body):
            b.add("0", True)
        else:
            p.ctx.problem("arithmetic on variables (a subscript in a value runs commands)")
            scan_substitutions(p, body, "$(())")
            b.add_unknown(variable=True)
    elif nxt == "[":
        raise ParseAbort("$[...] arithmetic is not supported")
    elif nxt == "(":
        p.i = i + 2
        p.sub_list(")", "$()")
        b.add_unknown(variable=False)
    elif nxt == "{":
        end = _brace_end(s, i + 2)
        if end < 0:
            raise ParseAbort("unterminated ${")
        body = s[i + 2 : end]
        p.i = end + 1
        if _NAME.fullmatch(body):
            _variable(p, b, body)
        else:
            if not _param_ok(body, p.ctx.dialect):
                p.ctx.problem(
                    f"${{{body[:30]}}}: an expansion that assigns or evaluates arithmetic"
                )
            scan_substitutions(p, body, "${}")
            b.add_unknown(variable=True)
    elif nxt == '"' and not quoted:
        if p.ctx.dialect == "dash":
            raise ParseAbort('$"..." strings mean something else to dash')
        p.i = i + 2
        double_quoted(p, b, heredoc=False)
    elif m := _NAME.match(s, i + 1):
        p.i = m.end()
        _variable(p, b, m.group())
    elif nxt and nxt in "?#$!":
        p.i = i + 2
        b.add("0", True)
    elif nxt and (nxt in "@*-" or nxt.isdigit()):
        p.i = i + 2
        b.add_unknown(variable=True)
    else:
        b.add("$", quoted)
        p.i = i + 1


def _variable(p: Lexer, b: WordBuilder, name: str) -> None:
    if name == "HOME":
        b.add(p.ctx.home, True)
    elif name == "PWD":
        b.add(p.ctx.pwd, True)
        b.pwd = True
    else:
        b.add_unknown(variable=True)


def double_quoted(p: Lexer, b: WordBuilder, heredoc: bool) -> None:
    """The inside of "...", from after the opening quote; or a whole here-document body."""
    s = p.s
    while True:
        if p.i >= len(s):
            if heredoc:
                return
            raise ParseAbort("unterminated double quote")
        ch = s[p.i]
        if ch == '"' and not heredoc:
            p.i += 1
            return
        if ch == "\\":
            nxt = s[p.i + 1 : p.i + 2]
            if nxt == "\n":
                p.i += 2
            elif (nxt and nxt in "$`\\") or (nxt == '"' and not heredoc):
                b.add(nxt, True)
                p.i += 2
            else:
                b.add("\\", True)
                p.i += 1
        elif ch == "$":
            dollar(p, b, quoted=True)
        elif ch == "`":
            backtick(p, b, in_dq=not heredoc)
        else:
            b.add(ch, True)
            p.i += 1


def backtick(p: Lexer, b: WordBuilder, in_dq: bool) -> None:
    s, j = p.s, p.i + 1
    inner: list[str] = []
    while j < len(s) and s[j] != "`":
        if s[j] == "\\" and j + 1 < len(s) and (s[j + 1] in "$`\\" or (in_dq and s[j + 1] == '"')):
            inner.append(s[j + 1])
            j += 2
        else:
            inner.append(s[j])
            j += 1
    if j >= len(s):
        raise ParseAbort("unterminated backquote")
    p.i = j + 1
    p.sub_text("".join(inner), "``")
    b.add_unknown(variable=False)


def scan_substitutions(p: Lexer, text: str, context: str) -> None:
    """Parse the command substitutions inside `text` (a here-document body, `${...}`,
    `$((...))`), treating it like double-quoted text."""
    double_quoted(p.spawn(text, context), WordBuilder(), heredoc=True)


def _skip_quote(s: str, j: int) -> int:
    """Index after the quoted string starting at s[j]."""
    quote = s[j]
    j += 1
    while j < len(s) and s[j] != quote:
        j += 2 if s[j] == "\\" and quote == '"' else 1
    return j + 1


def _arith_end(s: str, j: int) -> int:
    depth = 0
    while j < len(s):
        ch = s[j]
        if ch in "'\"":
            j = _skip_quote(s, j)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return j + 2 if s.startswith("))", j) else -1
            depth -= 1
        j += 1
    return -1


def _brace_end(s: str, j: int) -> int:
    depth = 1
    while j < len(s):
        ch = s[j]
        if ch == "\\":
            j += 2
            continue
        if ch in "'\"":
            j = _skip_quote(s, j)
            continue
        if s.startswith("${", j):
            depth += 1
            j += 2
            continue
        if ch == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def lex_word(p: Lexer) -> Word:
    """One word from p.i: quotes, escapes, continuations and expansions resolved."""
    s, start = p.s, p.i
    b = WordBuilder()
    if s[p.i] == "~":
        _tilde(p, b)
    while p.i < len(s) and s[p.i] not in _META:
        ch = s[p.i]
        if ch == "\\":
            if p.i + 1 >= len(s):
                b.add("\\", False)
                p.i += 1
            elif s[p.i + 1] == "\n":
                p.i += 2
            else:
                b.add(s[p.i + 1], True)
                p.i += 2
        elif ch == "'":
            end = s.find("'", p.i + 1)
            if end < 0:
                raise ParseAbort("unterminated single quote")
            b.add(s[p.i + 1 : end], True)
            p.i = end + 1
        elif ch == '"':
            p.i += 1
            double_quoted(p, b, heredoc=False)
        elif ch == "$" and s.startswith("$'", p.i):
            if p.ctx.dialect == "dash":
                raise ParseAbort("$'...' strings mean something else to dash")
            end = p.i + 2
            while end < len(s) and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            if end >= len(s):
                raise ParseAbort("unterminated $'...' string")
            b.add(decode_ansi_c(s[p.i + 2 : end]), True)
            p.i = end + 1
        elif ch == "$":
            dollar(p, b, quoted=False)
        elif ch == "`":
            backtick(p, b, in_dq=False)
        else:
            b.add(ch, False)
            p.i += 1
    if b.empty and p.i == start:
        raise ParseAbort(f"unexpected {s[p.i]!r}")
    word = b.build(s[start : p.i])
    if word.brace and p.ctx.dialect == "dash":
        raise ParseAbort(f"brace expansion in {word.raw!r} means nothing to dash")
    return word


def _tilde(p: Lexer, b: WordBuilder) -> None:
    s = p.s
    end = p.i + 1
    while end < len(s) and s[end] not in _META and s[end] != "/":
        end += 1
    user = s[p.i + 1 : end]
    if user == "":
        b.add(p.ctx.home, True)
    elif user == "+":
        if p.ctx.dialect == "dash":
            raise ParseAbort("~+ means nothing to dash")
        b.add(p.ctx.pwd, True)
        b.pwd = True
    elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", user):
        b.add("~" + user, True)  # ~user: resolved (or refused) by the path guard
    else:
        return
    p.i = end
