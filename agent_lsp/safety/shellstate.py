"""What the classifier knows of the shell between parts (`State`: the current folder, logical
and physical, and whether it is still known), what a walk of a folder found (`TreeInfo`), and
the text rules for program names and paths (a standard bin folder, a glob's literal prefix,
paths resolved in another process: /proc, /dev/fd)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.safety.risk import Part

__all__ = ["BIN_DIRS", "State", "TreeInfo", "process_path", "program_name", "static_prefix"]

BIN_DIRS = frozenset(
    {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
)


def program_name(word: str) -> str | None:
    """The program a static argv[0] names: its basename for a path in a standard bin folder,
    the word itself without a slash, None for any other path (a file the command runs)."""
    if "/" not in word:
        return word
    head, _, name = word.rpartition("/")
    return name if os.path.normpath(head or "/") in BIN_DIRS else None


def _procfs(text: str) -> bool:
    return text == "/proc" or text.startswith(("/proc/", "/dev/fd/"))


def process_path(lexical: str, real: str) -> bool:
    """Whether a path leads through /proc or /dev/fd (resolved in another process here than
    where the command runs): by its text, its target, or a link on the way."""
    if _procfs(lexical) or _procfs(real):
        return True
    if lexical == real:
        return False
    here = ""
    for name in lexical.strip("/").split("/"):
        here += "/" + name
        link = Path(here)
        if link.is_symlink() and _procfs(str(link.parent / link.readlink())):
            return True
    return False


def static_prefix(pattern: str) -> str:
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
class State:
    """The shell between parts: `cwd` physical, `pwd` logical (what bash's `cd` works on);
    `known` False once a `cd` may have failed or taken effect only in some branches."""

    cwd: Path
    pwd: str = ""
    known: bool = True
    chain: bool = False  # a cd after `&&`: the folder holds only to the end of that chain
    clean: bool = True  # this script runs in a shell of its own or at the top (for `cd`)
    parse_pwd: str = ""  # the folder `$PWD` and `~+` were expanded with
    # subshells a cd changed the folder of, with the folder to go back to when they end
    scopes: list[tuple[tuple[int, ...], Path, str, bool, bool]] = field(
        default_factory=list[tuple[tuple[int, ...], Path, str, bool, bool]]
    )
    parts: list[Part] = field(default_factory=list[Part])
    problems: list[str] = field(default_factory=list[str])

    def __post_init__(self) -> None:
        self.pwd = self.pwd or str(self.cwd)

    def enter(self, scope: tuple[int, ...]) -> None:
        """A command in `scope` runs next: subshells that ended give their folder back."""
        while self.scopes and self.scopes[-1][0] != scope[: len(self.scopes[-1][0])]:
            _, self.cwd, self.pwd, self.known, self.chain = self.scopes.pop()

    def change(self, scope: tuple[int, ...]) -> None:
        """A cd in `scope` is about to change the folder: remember the one to go back to."""
        if scope and not (self.scopes and self.scopes[-1][0] == scope):
            self.scopes.append((scope, self.cwd, self.pwd, self.known, self.chain))


@dataclass(frozen=True)
class TreeInfo:
    secrets: bool  # secret files or folders by name (or too big to tell)
    links_out: tuple[Path, ...]  # symbolic links leading out of the workspace (capped)
    secret_links: bool  # ... to secret files or folders
    complete: bool = True
