"""What a command line may do: parsed part by part, each simple command classified by its
program (`programs.dispatch`), its arguments (by the program's option grammar) and its
redirections, every path it names resolved by the `PathGuard`. The `Classifier` is the
builders' `Host`: it parses nested command strings, finds programs on PATH and walks folders
read recursively (for secret files and links leading out)."""

from __future__ import annotations

import os
from pathlib import Path

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.paths import PathGuard, is_secret_path
from agent_lsp.safety.programs import dispatch
from agent_lsp.safety.risk import Analysis, Finding, Part, Risk
from agent_lsp.safety.shellparse import MAX_DEPTH, MAX_PARTS, parse
from agent_lsp.safety.shellstate import State, TreeInfo
from agent_lsp.safety.shellwords import Command, Word

__all__ = ["Classifier"]

_WALK_SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox"})
_WALK_CAP = 20_000
_LINK_CAP = 3
# findings that keep a part from counting as vetted (it runs something or is not known)
_NOT_VETTED = frozenset(
    {Risk.EXEC, Risk.UNDECIDABLE, Risk.PROJECT, Risk.NETWORK, Risk.DESTRUCTIVE, Risk.FORBIDDEN}
)
_CLEAN_BEFORE = frozenset({"", ";", "\n", "&", "&&"})
_PIPED_AFTER = frozenset({"|", "|&", "&"})


class Classifier:
    def __init__(self, guard: PathGuard) -> None:
        self._guard = guard
        self._trees: dict[tuple[Path, bool], TreeInfo] = {}

    @property
    def guard(self) -> PathGuard:
        return self._guard

    def analyze(self, command: str, cwd: Path | None = None) -> Analysis:
        self._trees = {}  # files come and go between commands: never reuse a walk
        state = State(cwd=Path(cwd or self.guard.root))
        self.script(command, state, 0, "top", "bash")
        if len(state.parts) > MAX_PARTS:
            state.problems.append(f"more than {MAX_PARTS} sub-commands")
        downloads = any(p.downloads for p in state.parts)
        for part in state.parts:
            if downloads and part.runs_code:
                part.findings.append(
                    Finding(Risk.FORBIDDEN, "downloads code and runs it (curl/wget … | sh)")
                )
        return Analysis(command, state.parts, list(dict.fromkeys(state.problems)))

    # ---- Host ---------------------------------------------------------------------------
    def dispatch(self, b: Builder, prog: str, args: list[Word]) -> None:
        dispatch(b, prog, args)

    def script(self, text: str, state: State, depth: int, context: str, dialect: str) -> None:
        if depth > MAX_DEPTH:
            state.problems.append("nested too deeply")
            return
        parsed = parse(text, home=self.guard.home, pwd=state.pwd, dialect=dialect)
        prefix = "" if context == "top" else f"{context}: "
        state.problems.extend(prefix + p for p in parsed.problems)
        saved, state.parse_pwd = state.parse_pwd, state.pwd
        try:
            for cmd in parsed.commands:
                self.command(cmd, state, depth, context)
        finally:
            state.parse_pwd = saved

    def lookup(self, name: str, cwd: Path) -> Path | None:
        """Where bash would find a program (PATH, relative entries from `cwd`)."""
        for entry in os.environ.get("PATH", "").split(os.pathsep):
            folder = Path(entry or ".")
            candidate = (folder if folder.is_absolute() else cwd / folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        return None

    def tree(self, top: Path, follow: bool) -> TreeInfo:
        """Secret files under `top` (a capped walk; too big counts as yes) and, when the
        program follows links, the links under it that lead out of the workspace."""
        key = (top, follow)
        if key not in self._trees:
            self._trees[key] = self._walk(top, follow)
        return self._trees[key]

    def _walk(self, top: Path, follow: bool) -> TreeInfo:
        seen, secrets, links, secret_links = 0, False, list[Path](), False
        for dirpath, dirnames, filenames in os.walk(top):
            if not follow:
                dirnames[:] = [d for d in dirnames if d not in _WALK_SKIP]
            names = dirnames + filenames
            seen += len(names)
            if seen > _WALK_CAP:
                return TreeInfo(True, tuple(links), secret_links, complete=not follow)
            for n in names:
                path = Path(dirpath) / n
                if is_secret_path(path, self.guard.home):
                    secrets = True
                if follow and path.is_symlink():
                    res = self.guard.describe(path)
                    secret_links = secret_links or res.secret
                    if not res.inside and len(links) < _LINK_CAP:
                        links.append(path)
            if secrets and not follow:
                break
        return TreeInfo(secrets, tuple(links), secret_links)

    def files_under(self, top: Path) -> list[Path] | None:
        """The files a recursive read of `top` may open (None: too many to tell)."""
        out: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in _WALK_SKIP]
            out += [Path(dirpath) / n for n in filenames]
            if len(out) > _WALK_CAP:
                return None
        return out

    # ---- one simple command ---------------------------------------------------------------
    def command(self, cmd: Command, state: State, depth: int, context: str) -> None:
        where = cmd.context if context == "top" else context
        state.enter(cmd.scope)
        if state.chain and cmd.before != "&&":
            state.known, state.chain = False, False  # a cd after && held to the chain's end
        argv = [f"{n}={w.value}" for n, w in cmd.assigns] + [w.value for w in cmd.words]
        part = Part(argv=argv, cwd=state.cwd, context=where)
        state.parts.append(part)
        b = Builder(self, part, state, depth)
        b.scope = cmd.scope
        b.clean = (
            state.clean
            and cmd.compound == 0
            and cmd.before in _CLEAN_BEFORE
            and cmd.after not in _PIPED_AFTER
        )
        b.chained = cmd.before == "&&"
        part.plain_wrappers = not cmd.assigns
        b.plain = not cmd.assigns
        for i, (name, word) in enumerate(cmd.assigns):
            b.add(Risk.EXEC, f"sets the variable {name}", i)
            if word.variable:
                b.add(Risk.UNDECIDABLE, f"{name} is set from a variable", i)
        stdin: str | None = None
        for red in cmd.redirects:
            b.redirect(red)
            if red.heredoc and red.body:
                stdin = red.body[0]
            elif red.op == "<<<" and red.target is not None and red.target.static:
                stdin = red.target.value + "\n"
        if cmd.words:
            b.stdin = stdin
            b.expansions(cmd.words, len(cmd.assigns))
            b.run(cmd.words, len(cmd.assigns))
        else:
            b.vet = True  # redirections only: nothing runs
        part.vetted = b.vet and b.plain and not any(f.risk in _NOT_VETTED for f in part.findings)
