"""A bash parser for classification: splits a command line into its simple commands through
`;`, `&&`, `||`, `&`, pipes, `{ }`, `( )`, `if`/`while`/`until`/`for`, `$(...)`, backticks,
process substitution, here-docs and redirections, resolving quotes, escapes, line
continuations and ANSI-C strings. What it cannot decide (case, `[[ ]]`, arithmetic commands,
function definitions, arrays, unterminated quotes, too many parts, too deep) is reported in
`Script.problems`; the caller treats such a command as undecidable (fail closed).

`dialect="dash"` parses a `sh -c` string: the same parser, but whatever bash and dash read
differently (`$'...'`, `<<<`, `&>`, `|&`, `<(...)`, brace expansion, `time`, `${x/a/b}` ...) is
undecidable. Each command records the operator before and after it and how deep it sits in
compound commands, so that the classifier knows whether a `cd` surely took effect."""

from __future__ import annotations

import re
from pathlib import Path

from agent_lsp.safety.shellexpand import lex_word, scan_substitutions
from agent_lsp.safety.shellwords import (
    Command,
    ParseAbort,
    Redirect,
    Script,
    Word,
    suspicious_char,
)

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_PARTS", "Ctx", "Parser", "parse"]

MAX_CHARS = 10_000
MAX_PARTS = 50
MAX_DEPTH = 8
_PARSE_CAP = 100_000  # longer input is not even parsed

_OPS = (
    *("&&", "||", ";;&", ";;", ";&", "|&", "&>>", "&>", "<<<", "<<-", "<<", "<>", "<&"),
    *(">>", ">|", ">&", ";", "&", "|", "<", ">", "(", ")"),
)
_REDIRS = frozenset({">", ">>", ">|", "<", "<>", "&>", "&>>", ">&", "<&", "<<", "<<-", "<<<"})
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", "\n"})
_META = frozenset(" \t\n;&|<>()")
_OPENERS = frozenset({"!", "time", "{", "if", "then", "elif", "else", "while", "until", "do"})
_CLOSERS = frozenset({"}", "fi", "done"})
_UNSUPPORTED = frozenset({"case", "esac", "select", "coproc", "[[", "]]", "function", "in"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SAFE_LOOP_NAME = re.compile(r"[a-z_][a-z0-9_]*")  # not PATH, HOME, IFS, CDPATH ...
_ELEMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[.*\]\+?=", re.S)
_DASH_ONLY_OPS = frozenset({"&>", "&>>", "|&", "<<<", ";&", ";;&"})
_COMPOUND_OPEN = frozenset({"{", "if", "while", "until"})
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_FD = re.compile(r"\d+(?=[<>])")
_NAMED_FD = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}(?=[<>])")


class Ctx:
    def __init__(self, home: str, pwd: str, dialect: str = "bash") -> None:
        self.home = home
        self.pwd = pwd
        self.dialect = dialect
        self.commands: list[Command] = []
        self.problems: list[str] = []
        self.pipelines = 0
        self.subshells = 0

    def new_scope(self, scope: tuple[int, ...]) -> tuple[int, ...]:
        """The scope of a subshell opened inside `scope`."""
        self.subshells += 1
        return (*scope, self.subshells)

    def problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)


def parse(
    text: str, home: Path | str = "~", pwd: Path | str = ".", dialect: str = "bash"
) -> Script:
    """Every simple command of `text`, flattened in the order bash would meet them."""
    ctx = Ctx(str(home), str(pwd), dialect)
    if len(text) > MAX_CHARS:
        ctx.problem(f"longer than {MAX_CHARS} characters")
    if (bad := suspicious_char(text)) is not None:
        ctx.problem(f"invisible or control character {bad}")
    if len(text) <= _PARSE_CAP:
        try:
            Parser(text, ctx, 0, "top").parse_all()
        except ParseAbort as exc:
            ctx.problem(str(exc))
        except RecursionError:
            ctx.problem("nested too deeply")
    if len(ctx.commands) > MAX_PARTS:
        ctx.problem(f"more than {MAX_PARTS} sub-commands")
    return Script(ctx.commands, ctx.problems)


class Parser:
    def __init__(
        self, text: str, ctx: Ctx, depth: int, context: str, scope: tuple[int, ...] = ()
    ) -> None:
        if depth > MAX_DEPTH:
            raise ParseAbort(f"nested more than {MAX_DEPTH} levels deep")
        self.s = text
        self.i = 0
        self.ctx = ctx
        self.depth = depth
        self.context = context
        self.heredocs: list[tuple[str, bool, bool, Redirect]] = []
        self.peeked: tuple[int, int, tuple[str, str, Word | None]] | None = None
        self.compound = 0
        self.last_op = ""
        self.scope = scope  # the subshells this text runs in (a `cd` stays inside)

    def spawn(self, text: str, context: str) -> Parser:
        """A parser for text inside this one (a here-document body, `${...}`)."""
        return Parser(text, self.ctx, self.depth + 1, context, self.scope)

    # ---- structure -------------------------------------------------------------------
    def parse_all(self) -> None:
        stop = self.parse_list(frozenset())
        if stop != "eof":
            raise ParseAbort(f"unexpected {stop!r}")

    def parse_list(self, stops: frozenset[str]) -> str:
        """Commands until EOF or one of `stops` (an operator); returns what stopped it."""
        saved, self.last_op = self.last_op, ""
        try:
            while True:
                kind, text, _ = self.peek()
                if kind == "eof":
                    return "eof"
                if kind == "op" and text in stops:
                    self.take()
                    return text
                if kind == "op" and text in (";;", ";&", ";;&"):
                    raise ParseAbort("case statements are not supported")
                if kind == "op" and text in _SEPARATORS:
                    self.take()
                    self.last_op = text
                    continue
                if kind == "op" and text == ")":
                    raise ParseAbort("unexpected ')'")
                self.ctx.pipelines += 1
                self.parse_command(self.ctx.pipelines)
        finally:
            self.last_op = saved

    def parse_command(self, pipeline: int) -> None:
        cmd = Command(depth=self.depth, context=self.context, pipeline=pipeline, scope=self.scope)
        cmd.before = self.last_op
        while True:
            kind, text, word = self.peek()
            if kind == "eof" or (kind == "op" and text in _SEPARATORS | {")"}):
                break
            if kind == "op" and text == "(":
                if cmd.words or cmd.assigns or cmd.redirects:
                    raise ParseAbort("unexpected '(' (arrays and function definitions unsupported)")
                self.take()
                if self.peek()[1] == "(":
                    raise ParseAbort("arithmetic commands (( )) are not supported")
                self.sub_list(")", "subshell")
                continue
            if kind == "op" and text in _REDIRS:
                self.take()
                cmd.redirects.append(self.redirect(text, word))
                continue
            if kind == "op":
                raise ParseAbort(f"unexpected {text!r}")
            assert word is not None
            self.take()
            if not cmd.words and self.reserved(word, cmd):
                continue
            match = _ASSIGN.match(word.raw)
            if not cmd.words and _ELEMENT.match(word.raw):
                raise ParseAbort("array element assignments are not supported")
            if not cmd.words and match:
                if self.peek()[1] == "(":
                    raise ParseAbort("array assignments are not supported")
                value = word.value.split("=", 1)[1]
                if value.startswith("~"):
                    value = self.ctx.home + value[1:] if value[1:2] in ("", "/", ":") else value
                assigned = Word(word.raw, value, word.dynamic, variable=word.variable)
                cmd.assigns.append((match.group(1), assigned))
                continue
            if cmd.words == [] and self.peek()[1] == "(" and _NAME.fullmatch(word.raw):
                raise ParseAbort("function definitions are not supported")
            cmd.words.append(word)
        kind, text, _ = self.peek()
        cmd.after = text if kind == "op" else ""
        cmd.compound = self.compound
        if cmd.words or cmd.assigns or cmd.redirects:
            self.ctx.commands.append(cmd)

    def reserved(self, word: Word, cmd: Command) -> bool:
        """Handle a reserved word in command position; True when it was one."""
        if word.raw != word.value or cmd.assigns or cmd.redirects:
            return False
        name = word.value
        if name == "time" and self.ctx.dialect == "dash":
            raise ParseAbort("'time' is a program to dash, a keyword to bash")
        if name in _OPENERS:
            following = self.peek()[2]
            if name == "time" and following is not None and following.raw == "-p":
                self.take()
            self.compound += name in _COMPOUND_OPEN
            return True
        if name in _CLOSERS:
            self.compound = max(0, self.compound - 1)
            return True
        if name in _UNSUPPORTED:
            raise ParseAbort(f"'{name}' is not supported")
        if name == "for":
            self.for_header()
            self.compound += 1
            return True
        return False

    def for_header(self) -> None:
        kind, text, word = self.take()
        if kind == "op" and text == "(":
            raise ParseAbort("arithmetic for loops are not supported")
        if word is None or not _NAME.fullmatch(word.value):
            raise ParseAbort("malformed for loop")
        if not _SAFE_LOOP_NAME.fullmatch(word.value):
            raise ParseAbort(f"a for loop setting {word.value} (may change how the shell works)")
        while self.peek()[1] == "\n":
            self.take()
        kind, text, word = self.peek()
        if word is not None and word.raw == "in":
            self.take()
            while True:
                kind, text, word = self.peek()
                if kind == "eof" or (kind == "op" and text in (";", "\n")):
                    break
                if word is None:
                    raise ParseAbort("malformed for loop")
                self.take()

    def sub_list(self, close: str, context: str) -> None:
        if self.depth + 1 > MAX_DEPTH:
            raise ParseAbort(f"nested more than {MAX_DEPTH} levels deep")
        saved = (self.depth, self.context, self.scope, self.compound)
        self.depth, self.context = self.depth + 1, context
        self.scope, self.compound = self.ctx.new_scope(self.scope), 0
        try:
            if self.parse_list(frozenset({close})) != close:
                raise ParseAbort(f"missing {close!r}")
        finally:
            self.depth, self.context, self.scope, self.compound = saved

    def sub_text(self, text: str, context: str) -> None:
        scope = self.ctx.new_scope(self.scope)
        Parser(text, self.ctx, self.depth + 1, context, scope).parse_all()

    def redirect(self, op: str, fd_word: Word | None) -> Redirect:
        fd = int(fd_word.value) if fd_word is not None else None
        _, _, target = self.take()
        if target is None:
            raise ParseAbort(f"redirection {op} without a target")
        if op in ("<<", "<<-"):
            quoted = any(q in target.raw for q in "'\"\\")
            red = Redirect(op, fd, target)
            self.heredocs.append((target.value, op == "<<-", quoted, red))
            return red
        return Redirect(op, fd, target)

    # ---- tokens ------------------------------------------------------------------------
    def peek(self) -> tuple[str, str, Word | None]:
        """The next token, lexed once (lexing parses substitutions, which records commands)."""
        if self.peeked is None or self.peeked[0] != self.i:
            start = self.i
            token = self._token(consume_heredocs=False)
            self.peeked = (start, self.i, token)
            self.i = start
        return self.peeked[2]

    def take(self) -> tuple[str, str, Word | None]:
        if self.peeked is not None and self.peeked[0] == self.i:
            _, self.i, token = self.peeked
            self.peeked = None
            if token[:2] == ("op", "\n"):
                self.read_heredocs()
            return token
        return self._token(consume_heredocs=True)

    def _token(self, consume_heredocs: bool) -> tuple[str, str, Word | None]:
        s = self.s
        while self.i < len(s):
            ch = s[self.i]
            if ch in " \t":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif ch == "#":
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            else:
                break
        if self.i >= len(s):
            return ("eof", "", None)
        if s[self.i] == "\n":
            self.i += 1
            if consume_heredocs:
                self.read_heredocs()
            return ("op", "\n", None)
        if _NAMED_FD.match(s, self.i):
            raise ParseAbort("named file-descriptor redirections are not supported")
        fd = _FD.match(s, self.i)
        fd_word = None
        if fd:
            self.i = fd.end()
            fd_word = Word(fd.group(), fd.group())
        if fd and len(fd.group()) > 1 and self.ctx.dialect == "dash":
            raise ParseAbort("file descriptors above 9 mean something else to dash")
        if s.startswith(("<(", ">("), self.i) and fd_word is None:
            if self.ctx.dialect == "dash":
                raise ParseAbort("process substitution means something else to dash")
            return ("word", "", self.procsub())
        for op in _OPS:
            if s.startswith(op, self.i):
                if op in _DASH_ONLY_OPS and self.ctx.dialect == "dash":
                    raise ParseAbort(f"{op!r} means something else to dash")
                self.i += len(op)
                return ("op", op, fd_word)
        return ("word", "", lex_word(self))

    def read_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delim, strip, quoted, red in pending:
            lines: list[str] = []
            while True:
                if self.i >= len(self.s):
                    raise ParseAbort(f"here-document {delim!r} is not terminated")
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i : end]
                self.i = min(end + 1, len(self.s))
                if (line.lstrip("\t") if strip else line) == delim:
                    break
                lines.append(line)
            red.body.append("\n".join(lines) + "\n")
            if not quoted:
                scan_substitutions(self, "\n".join(lines), "heredoc")

    def procsub(self) -> Word:
        self.i += 2
        self.sub_list(")", "<()" if self.s[self.i - 2] == "<" else ">()")
        if self.i < len(self.s) and self.s[self.i] not in _META:
            raise ParseAbort("text glued to a process substitution")
        return Word("<(...)", "/dev/fd/63", procsub=True)
