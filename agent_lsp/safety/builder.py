"""`Builder`: collects the findings of one part (a simple command) for the program handlers —
every path an argument, an option value or a redirection names goes through `path` (reads)
and `_write` (writes: protected files, start-up files, devices, outside). `Host` is what a
builder needs of the classifier."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Protocol

from agent_lsp.safety.paths import SAFE_DEVICES, PathError, PathGuard, Resolved
from agent_lsp.safety.risk import Finding, Part, Risk
from agent_lsp.safety.shellstate import State, TreeInfo, process_path, static_prefix
from agent_lsp.safety.shellwords import Redirect, Word

__all__ = ["Builder", "Host"]

_GLOB_CAP = 2_000
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_DUP_OPS = frozenset({">&", "<&"})
_SAFE_NAMES = SAFE_DEVICES | {"/dev/fd/0", "/dev/fd/1", "/dev/fd/2"}


class Host(Protocol):
    """What a builder needs of the classifier."""

    @property
    def guard(self) -> PathGuard: ...

    def dispatch(self, b: Builder, prog: str, args: list[Word]) -> None: ...

    def script(self, text: str, state: State, depth: int, context: str, dialect: str) -> None: ...

    def lookup(self, name: str, cwd: Path) -> Path | None: ...

    def tree(self, top: Path, follow: bool) -> TreeInfo: ...


class Builder:
    """Collects the findings of one part; the program handlers call it."""

    def __init__(self, host: Host, part: Part, state: State, depth: int) -> None:
        self.host = host
        self.guard = host.guard
        self.part = part
        self.state = state
        self.depth = depth
        self.offset = 0  # index of the current program's argv[0] in part.argv
        self.stdin: str | None = None  # a here-document or here-string fed to the command
        self.clean = False  # a `cd` here surely changes the folder of later parts
        self.chained = False  # ... but only after `&&`
        self.scope: tuple[int, ...] = ()  # the subshells this part runs in
        self.plain = True  # only wrappers that keep the meaning (timeout, nice, command)
        self.vet = False  # the handler found a vetted program with grammar-known arguments

    @property
    def cwd(self) -> Path:
        return self.state.cwd

    def add(self, risk: Risk, reason: str, token: int | None = None) -> None:
        self.part.findings.append(Finding(risk, reason, token))

    def inside(self, path: Path) -> bool:
        """Whether `path` (links resolved) lies in the workspace or an extra root: a cheap
        test for programs found on PATH (most are in /usr/bin)."""
        real = os.path.realpath(path)
        return any(real == str(r) or real.startswith(str(r) + os.sep) for r in self.guard.roots)

    def token(self, idx: int) -> int:
        """The part's argv index of the current program's argument `idx`."""
        return self.offset + 1 + idx

    # ---- running a program ------------------------------------------------------------
    def run(self, words: list[Word], offset: int = 0) -> None:
        """Classify `words` as a command (argv[0] first); wrappers call this again."""
        self.offset = offset
        self.part.core_start = offset
        if not words[0].static:
            self.add(Risk.UNDECIDABLE, "the program is not known before running", offset)
            return
        self.host.dispatch(self, words[0].value, words[1:])

    def expansions(self, words: list[Word], offset: int) -> None:
        """Words that expand into several (brace expansion) or into names a program reads as
        options (a wildcard matching a file named `-rf` or `--output=x`): undecidable."""
        for i, w in enumerate(words):
            token = offset + i
            if w.brace:
                self.add(Risk.UNDECIDABLE, f"brace expansion in {w.raw!r}", token)
            elif w.glob and not w.pattern.startswith("/") and self.state.known:
                for n, match in enumerate(glob.iglob(w.pattern, root_dir=self.cwd)):  # noqa: PTH207
                    if match.startswith(("-", "+")):
                        self.add(
                            Risk.UNDECIDABLE,
                            f"{w.raw!r} matches {match!r}, which reads as an option",
                            token,
                        )
                        break
                    if n > _GLOB_CAP:
                        break

    def nested(self, words: list[Word], context: str) -> None:
        """Another command run by this one (find -exec, xargs): a part of its own."""
        if not words:
            return
        part = Part(argv=[w.value for w in words], cwd=self.cwd, context=context)
        self.state.parts.append(part)
        inner = Builder(self.host, part, self.state, self.depth + 1)
        inner.run(words)
        part.vetted = False

    def nested_script(self, text: str, context: str, dialect: str = "bash") -> None:
        """A command string another shell runs (`bash -c`, `sh -c`, `watch`): parsed and
        classified; a `cd` in it changes only that shell's folder."""
        state = self.state
        saved = (state.cwd, state.pwd, state.known, state.chain, state.clean, state.scopes)
        state.clean, state.chain, state.scopes = True, False, []
        try:
            self.host.script(text, state, self.depth + 1, context, dialect)
        finally:
            state.cwd, state.pwd, state.known, state.chain, state.clean, state.scopes = saved

    def same_shell_script(self, text: str, context: str) -> None:
        """A command string this shell runs itself (`eval`): its `cd` stays."""
        saved_clean = self.state.clean
        self.state.clean = saved_clean and self.clean and not self.chained and not self.scope
        try:
            self.host.script(text, self.state, self.depth + 1, context, "bash")
        finally:
            self.state.clean = saved_clean

    # ---- paths ----------------------------------------------------------------------------
    def arg(self, idx: int, word: Word, mode: str) -> None:
        """A word used as a path (argument `idx`): mode read (content), tree (a folder's
        content), follow (... following links), meta (names and metadata), walk (names,
        following links), write."""
        token = self.token(idx)
        if word.procsub:
            return
        if word.pwd and self.state.parse_pwd != self.state.pwd:
            self.add(Risk.UNDECIDABLE, f"{word.raw!r}: $PWD after a cd", token)
        elif word.brace:
            self.add(Risk.UNDECIDABLE, f"brace expansion in {word.raw!r}", token)
        elif word.dynamic:
            self.add(Risk.UNDECIDABLE, f"{word.raw!r} is not known before running", token)
        elif word.glob:
            for target in self.expand(word, token):
                self.path(token, target, mode)
        else:
            self.path(token, word.value, mode)

    def expand(self, word: Word, token: int) -> list[str]:
        """The files a glob names now (bash rules: dot files only when the pattern says so);
        the pattern itself when nothing matches, and the folder it lists in any case."""
        pattern = word.pattern
        if not pattern.startswith("/"):
            if not self.state.known:
                self.add(Risk.UNDECIDABLE, f"{word.raw!r}: the current folder is not known", token)
                return []
            pattern = glob.escape(str(self.cwd)) + "/" + pattern
        found: list[str] = []
        for match in glob.iglob(pattern):  # noqa: PTH207 - bash semantics, absolute patterns
            found.append(match)
            if len(found) > _GLOB_CAP:
                self.add(Risk.UNDECIDABLE, f"{word.raw!r} matches too many files", token)
                break
        static = static_prefix(word.pattern)
        folder = static.rpartition("/")[0] or ("/" if static.startswith("/") else ".")
        self.path(token, folder, "meta")
        return found or [word.value]

    def resolve(self, text: str) -> Resolved | None:
        try:
            return self.guard.resolve(text, base=self.cwd)
        except PathError as exc:
            self.add(Risk.UNDECIDABLE, str(exc))
            return None

    def path(self, token: int | None, text: str, mode: str) -> None:
        if text.startswith(("/dev/tcp/", "/dev/udp/")):
            self.add(Risk.NETWORK, f"opens a network connection ({text})", token)
            self.part.network = True
            return
        absolute = text.startswith(("/", "~"))
        if not absolute and not self.state.known:
            self.add(
                Risk.UNDECIDABLE,
                f"{text}: relative to a folder not known (a cd may have failed)",
                token,
            )
            return
        lexical = os.path.normpath(text if absolute else os.path.join(self.cwd, text))  # noqa: PTH118
        if lexical in _SAFE_NAMES:
            return
        res = self.resolve(text)
        if res is None:
            return
        if process_path(lexical, str(res.path)):
            self.add(Risk.UNDECIDABLE, f"{text} names another process's files or folder", token)
            return
        if mode == "write":
            self._write(token, res)
        elif not res.safe_device:
            self._read(token, res, mode)

    def _finding(
        self, risk: Risk, reason: str, token: int | None, res: Resolved, tree: bool = False
    ) -> None:
        self.part.findings.append(Finding(risk, reason, token, res, tree))

    def _read(self, token: int | None, res: Resolved, mode: str) -> None:
        shown = res.raw
        tree = mode in ("tree", "follow")
        if res.secret and mode not in ("meta", "walk"):
            self._finding(Risk.SECRET, f"reads the secret file {shown}", token, res)
        elif mode in ("tree", "follow", "walk") and res.inside and res.path.is_dir():
            info = self.host.tree(res.path, mode in ("follow", "walk"))
            if tree and info.secrets:
                self._finding(
                    Risk.SECRET, f"searches {shown}, which holds secret files", token, res, True
                )
            if mode in ("follow", "walk"):
                self._links_out(token, res, info, tree)
        if not res.inside:
            self._finding(Risk.OUTSIDE, f"reads {shown} outside the workspace", token, res, tree)
        else:
            self._finding(Risk.READ, f"reads {shown}", token, res, tree)

    def _links_out(self, token: int | None, res: Resolved, info: TreeInfo, tree: bool) -> None:
        if not info.complete:
            self._finding(
                Risk.OUTSIDE, f"follows links under {res.raw}: too many files to check", token, res
            )
        for link in info.links_out[:3]:
            self._finding(
                Risk.OUTSIDE, f"follows the link {link} out of the workspace", token, res, tree
            )
        if info.secret_links and tree:
            self._finding(
                Risk.SECRET, f"follows a link under {res.raw} to secret files", token, res, True
            )

    def _write(self, token: int | None, res: Resolved) -> None:
        shown = res.raw
        if res.safe_device:
            return
        if res.protected:
            self._finding(Risk.PROTECTED, f"writes {shown} (git internals or policy)", token, res)
        elif res.startup:
            self._finding(Risk.FORBIDDEN, f"writes the shell start-up file {shown}", token, res)
        elif res.device:
            self._finding(Risk.FORBIDDEN, f"writes to the device {shown}", token, res)
        if res.secret:
            self._finding(Risk.SECRET, f"writes the secret file {shown}", token, res)
        if res.inside:
            self._finding(Risk.WRITE, f"writes {shown}", token, res)
        else:
            self._finding(Risk.OUTSIDE, f"writes {shown} outside the workspace", token, res)

    # ---- redirections ------------------------------------------------------------------
    def redirect(self, red: Redirect) -> None:
        target = red.target
        if target is None or red.heredoc or red.op == "<<<":
            if red.op == "<<<" and target is not None and target.variable:
                self.add(Risk.UNDECIDABLE, "here-string with a variable")
            return
        if red.op in _DUP_OPS and (target.value.isdigit() or target.value == "-"):
            return
        if target.procsub:
            return
        if not target.static:
            self.add(Risk.UNDECIDABLE, f"redirection target {target.raw!r} unknown")
            return
        mode = "write" if red.op in _WRITE_OPS or (red.op in _DUP_OPS and ">" in red.op) else "read"
        self.path(None, target.value, mode)
        if red.op == "<>":
            self.path(None, target.value, "read")
