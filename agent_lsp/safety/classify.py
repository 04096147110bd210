"""What a command line may do: parsed part by part, each simple command classified by its
program, arguments and redirections, every path it names resolved by the `PathGuard`."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.safety.paths import PathError, PathGuard, Resolved, is_secret_path
from agent_lsp.safety.risk import Analysis, Finding, Part, Risk
from agent_lsp.safety.shellparse import MAX_DEPTH, MAX_PARTS, parse
from agent_lsp.safety.shellwords import Command, Redirect, Word

__all__ = ["Builder", "Classifier", "program_name"]

BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
)
_WALK_SKIP = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox"})
_WALK_CAP = 20_000
_GLOB_CAP = 2_000
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_DUP_OPS = frozenset({">&", "<&"})


def program_name(word: str) -> str | None:
    """The program a static argv[0] names: its basename for a path in a standard bin folder,
    the word itself without a slash, None for any other path (a file the command runs)."""
    if "/" not in word:
        return word
    head, _, name = word.rpartition("/")
    return name if os.path.normpath(head or "/") in BIN_DIRS else None


def _static_prefix(pattern: str) -> str:
    """The literal text of a glob pattern before its first wildcard (escapes undone)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("[", i) and pattern[i + 2 : i + 3] == "]" and pattern[i + 1] in "*?[":
            out.append(pattern[i + 1])
            i += 3
        elif pattern[i] in "*?[":
            break
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


@dataclass
class _State:
    cwd: Path
    parts: list[Part] = field(default_factory=list[Part])
    problems: list[str] = field(default_factory=list[str])


class Classifier:
    def __init__(self, guard: PathGuard) -> None:
        self.guard = guard
        self._secret_dirs: dict[Path, bool] = {}

    def analyze(self, command: str, cwd: Path | None = None) -> Analysis:
        self._secret_dirs = {}  # files come and go between commands: never reuse a walk
        state = _State(cwd=Path(cwd or self.guard.root))
        self.script(command, state, 0, "top")
        if len(state.parts) > MAX_PARTS:
            state.problems.append(f"more than {MAX_PARTS} sub-commands")
        downloads = any(p.downloads for p in state.parts)
        for part in state.parts:
            if downloads and part.runs_code:
                part.findings.append(
                    Finding(Risk.FORBIDDEN, "downloads code and runs it (curl/wget … | sh)")
                )
        return Analysis(command, state.parts, list(dict.fromkeys(state.problems)))

    def script(self, text: str, state: _State, depth: int, context: str) -> None:
        if depth > MAX_DEPTH:
            state.problems.append("nested too deeply")
            return
        parsed = parse(text, home=self.guard.home, pwd=state.cwd)
        prefix = "" if context == "top" else f"{context}: "
        state.problems.extend(prefix + p for p in parsed.problems)
        for cmd in parsed.commands:
            self.command(cmd, state, depth, context)

    def command(self, cmd: Command, state: _State, depth: int, context: str) -> None:
        where = cmd.context if context == "top" else context
        argv = [f"{n}={w.value}" for n, w in cmd.assigns] + [w.value for w in cmd.words]
        part = Part(argv=argv, cwd=state.cwd, context=where)
        state.parts.append(part)
        b = Builder(self, part, state, depth)
        part.plain_wrappers = not cmd.assigns
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
            b.run(cmd.words, len(cmd.assigns))

    def lookup(self, name: str, cwd: Path) -> Path | None:
        """Where bash would find a program (PATH, relative entries from `cwd`)."""
        for entry in os.environ.get("PATH", "").split(os.pathsep):
            folder = Path(entry or ".")
            candidate = (folder if folder.is_absolute() else cwd / folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        return None

    def files_under(self, top: Path) -> list[Path] | None:
        """The files a recursive read of `top` may open (None: too many to tell)."""
        out: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in _WALK_SKIP]
            out += [Path(dirpath) / n for n in filenames]
            if len(out) > _WALK_CAP:
                return None
        return out

    def has_secrets(self, top: Path) -> bool:
        """Whether a folder holds secret files (a capped walk; too big counts as yes)."""
        if top in self._secret_dirs:
            return self._secret_dirs[top]
        seen, found = 0, False
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in _WALK_SKIP]
            seen += len(dirnames) + len(filenames)
            if seen > _WALK_CAP or any(
                is_secret_path(Path(dirpath) / n, self.guard.home) for n in dirnames + filenames
            ):
                found = True
                break
        self._secret_dirs[top] = found
        return found


class Builder:
    """Collects the findings of one part; the program handlers call it."""

    def __init__(self, cls: Classifier, part: Part, state: _State, depth: int) -> None:
        self.cls = cls
        self.guard = cls.guard
        self.part = part
        self.state = state
        self.depth = depth
        self.offset = 0  # index of the current program's argv[0] in part.argv
        self.stdin: str | None = None  # a here-document or here-string fed to the command

    @property
    def cwd(self) -> Path:
        return self.state.cwd

    def add(self, risk: Risk, reason: str, token: int | None = None) -> None:
        self.part.findings.append(Finding(risk, reason, token))

    # ---- running a program ------------------------------------------------------------
    def run(self, words: list[Word], offset: int = 0) -> None:
        """Classify `words` as a command (argv[0] first); wrappers call this again."""
        from agent_lsp.safety.programs import dispatch

        self.offset = offset
        self.part.core_start = offset
        if not words[0].static:
            self.add(Risk.UNDECIDABLE, "the program is not known before running", offset)
            return
        dispatch(self, words[0].value, words[1:])

    def nested(self, words: list[Word], context: str) -> None:
        """Another command run by this one (find -exec, xargs): a part of its own."""
        if not words:
            return
        part = Part(argv=[w.value for w in words], cwd=self.cwd, context=context)
        self.state.parts.append(part)
        Builder(self.cls, part, self.state, self.depth + 1).run(words)

    def nested_script(self, text: str, context: str) -> None:
        """A command string this one runs (`bash -c`, `eval`, `watch`): parsed and classified."""
        self.cls.script(text, self.state, self.depth + 1, context)

    # ---- paths ----------------------------------------------------------------------------
    def arg(self, idx: int, word: Word, mode: str) -> None:
        """A word used as a path: mode read (content), tree (a folder's content), meta
        (names and metadata), write."""
        token = self.offset + 1 + idx
        if word.procsub:
            return
        if word.brace:
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
            pattern = glob.escape(str(self.cwd)) + "/" + pattern
        found: list[str] = []
        for match in glob.iglob(pattern):  # noqa: PTH207 - bash semantics, absolute patterns
            found.append(match)
            if len(found) > _GLOB_CAP:
                self.add(Risk.UNDECIDABLE, f"{word.raw!r} matches too many files", token)
                break
        static = _static_prefix(word.pattern)
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
        res = self.resolve(text)
        if res is None:
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
        if res.secret and mode != "meta":
            self._finding(Risk.SECRET, f"reads the secret file {shown}", token, res)
        elif mode == "tree" and res.inside and res.path.is_dir() and self.cls.has_secrets(res.path):
            self._finding(Risk.SECRET, f"searches {shown}, which holds secret files", token, res)
        tree = mode == "tree"
        if not res.inside:
            self._finding(Risk.OUTSIDE, f"reads {shown} outside the workspace", token, res, tree)
        else:
            self._finding(Risk.READ, f"reads {shown}", token, res, tree)

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
