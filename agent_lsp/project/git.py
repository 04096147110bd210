"""git as the agent's own tools call it (`git_status`, `git_diff`, the project status in the
prompt): inside the OS sandbox, never writing, with a hardened configuration.

A repository's config can run programs (`core.fsmonitor`, filters, textconv, an external
diff, a pager, hooks), and the agent's commands could have written it. So git runs confined
like any command — read-only, no network, no API keys — with system and global config
ignored and the executable settings switched off on the command line. git does not run at all
in a repository whose config names a program (a filter, a textconv, an fsmonitor …), sandbox
or not: inside the sandbox it sees the secret files, which such a program could print.

git sees the workspace and nothing else: its work tree is the workspace whatever the config
says (`core.worktree`), its git folder is the workspace's `.git` — a `.git` file may point
elsewhere only to a linked worktree or a submodule that points back (git's own records of
them), never to another repository — and it never looks for a repository above the
workspace."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from adapters.results import CommandResult
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.sandbox import Confinement, Sandbox

__all__ = ["GIT_ENV", "HARDENED", "Git"]

HARDENED = (
    "--no-pager",
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
    "-c", "core.untrackedCache=false",
    "-c", "diff.external=",
    "-c", "credential.helper=",
    "-c", "core.sshCommand=false",
    "-c", "protocol.allow=never",
    "-c", "color.ui=false",
    "-c", "log.showSignature=false",
    "-c", "submodule.recurse=false",
    "-c", "diff.ignoreSubmodules=all",
    "-c", "status.submoduleSummary=false",
)  # fmt: skip
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "LC_ALL": "C",
}
# Config keys that name a program git may run (checked only where there is no sandbox).
_RUNS = re.compile(
    r"^(filter\.|include|alias\.|credential|gpg\.|uploadpack\.|protocol\.|"
    r"diff\..+\.(textconv|command)$|merge\..+\.driver$|remote\..+\.(uploadpack|receivepack)$|"
    r"core\.(fsmonitor|hookspath|pager|sshcommand|editor|askpass|gitproxy|"
    r"alternaterefscommand)$|sequence\.editor|interactive\.difffilter|url\.|"
    r"log\.showsignature|submodule\.|trace2\.)",
    re.I,
)
_SYSTEM_DIRS = ("/usr/bin", "/bin", "/usr/local/bin")


class Git:
    """Runs read-only git commands for one workspace."""

    def __init__(
        self,
        root: Path,
        shell: ConfinedShell | None = None,
        hide: Callable[[str], bool] | None = None,
    ) -> None:
        """`hide(rel)`: paths whose names and changes never leave git's output (secret files,
        deny path rules); git itself sees them as they are, so it does not report the empty
        stand-ins the sandbox would show as changes."""
        self.root = root
        self.shell = shell or ConfinedShell(
            Sandbox(), Confinement(visible=(root,), show_secrets=True)
        )
        self.hide: Callable[[str], bool] = hide or _nothing
        self.program = shutil.which("git", path=os.pathsep.join(_SYSTEM_DIRS)) or "git"
        self._checked: tuple[tuple[object, ...], str | None] | None = None

    async def run(self, *args: str, timeout: float = 30) -> CommandResult:  # noqa: ASYNC109
        """`git <hardened options> args` in the root; exit 126 with the reason when it
        may not run."""
        # in the sandbox too: git runs there seeing the secret files (so that it does not
        # report their empty stand-ins as changes), and a program its config names (a filter's
        # `clean = cat .env`) would print them into a diff
        problem = await self._unsafe_config()
        if problem:
            return CommandResult(("git", *args), 126, problem, False, False, 0, 0.0)
        pinned = self.pinned()
        if isinstance(pinned, str):
            code = 128 if pinned.startswith("fatal:") else 126
            return CommandResult(("git", *args), code, pinned, False, False, 0, 0.0)
        env = {**os.environ, **GIT_ENV}
        return await self.shell.run(
            [self.program, *pinned, *HARDENED, *args], cwd=self.root, timeout=timeout, env=env
        )

    def pinned(self) -> list[str] | str:
        """The options that hold git to the workspace, or why git may not run here."""
        root = Path(os.path.realpath(self.root))
        dot = root / ".git"
        if dot.is_symlink():
            return "git not run: the workspace's .git is a link"
        if dot.is_dir():
            folder: Path | None = dot
        elif dot.is_file():
            folder = linked_git_folder(root, dot)
            if folder is None:
                return (
                    "git not run: the workspace's .git file points to a git folder outside it "
                    "that is not a worktree or submodule of this folder"
                )
        else:  # a repository above the workspace is not the workspace's
            return f"fatal: not a git repository: {root} has no .git"
        if folder.is_relative_to(root) and (elsewhere := borrows(root, folder)):
            return f"git not run: the workspace's git folder {elsewhere}"
        return [f"--git-dir={folder}", f"--work-tree={root}"]

    async def _unsafe_config(self) -> str | None:
        """Why the repository's config stops git (it names a program), remembered while its
        config files are unchanged (a git tool runs git several times)."""
        pinned = self.pinned()
        if isinstance(pinned, str):
            return None if pinned.startswith("fatal:") else pinned
        key = _config_key(Path(pinned[0].removeprefix("--git-dir=")))
        if self._checked is not None and self._checked[0] == key:
            return self._checked[1]
        problem = await self._list_config(pinned)
        self._checked = (key, problem)
        return problem

    async def _list_config(self, pinned: list[str]) -> str | None:
        env = {**os.environ, **GIT_ENV}
        listed = await self.shell.run(
            [self.program, *pinned, "config", "--list", "--name-only", "--show-scope"],
            cwd=self.root,
            timeout=15,
            env=env,
        )
        if listed.exit_code != 0 and "not a git repository" not in listed.output:
            return f"git not run: its configuration could not be read ({listed.output[:200]})"
        names: list[str] = []
        for line in listed.output.splitlines():
            scope, _, name = line.partition("\t")
            if scope != "command" and _RUNS.search(name.strip()):
                names.append(name.strip())
        if names:
            return (
                "git not run: this repository's git config names programs git would run "
                f"({', '.join(sorted(set(names))[:5])})"
            )
        return None


def _config_key(folder: Path) -> tuple[object, ...]:
    """What the repository's config is made of now: its config files' identity and size and
    time (a linked worktree's shared folder's too)."""
    parts: list[object] = [str(folder)]
    common = folder
    with contextlib.suppress(OSError):
        common = folder / (folder / "commondir").read_text(encoding="utf-8").strip()
    for path in (folder / "config", folder / "config.worktree", common / "config"):
        try:
            st = path.stat()
        except OSError:
            parts.append(None)
            continue
        parts.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(parts)


def borrows(root: Path, folder: Path) -> str | None:
    """How a git folder in the workspace would read another repository, if it would: a
    `commondir` (the shared part of a linked worktree), borrowed objects
    (`objects/info/alternates`), or its parts as links out of the workspace."""
    if (folder / "commondir").exists():
        return "names a common folder elsewhere (commondir)"
    alternates = folder / "objects" / "info" / "alternates"
    with contextlib.suppress(OSError):
        if alternates.read_text(encoding="utf-8", errors="replace").strip():
            return "borrows objects from another repository (objects/info/alternates)"
    for part in ("objects", "refs", "HEAD", "packed-refs", "index", "config", "info", "logs"):
        path = folder / part
        if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(root):
            return f"has {part} as a link out of the workspace"
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder / "objects"):
            if entry.is_symlink() and not Path(os.path.realpath(entry.path)).is_relative_to(root):
                return f"has objects/{entry.name} as a link out of the workspace"
    return None


def linked_git_folder(root: Path, dot: Path) -> Path | None:
    """Where the `.git` file `dot` of `root` points, when git may follow it: a folder inside
    the workspace, a linked worktree's folder whose `gitdir` record names this `.git`, or a
    submodule's folder whose `core.worktree` is this workspace."""
    try:
        match = _GITDIR.search(dot.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    if match is None:
        return None
    folder = Path(os.path.realpath(dot.parent / match.group(1)))
    if not folder.is_dir():
        return None
    if folder.is_relative_to(root):
        return folder
    with contextlib.suppress(OSError):
        back = (folder / "gitdir").read_text(encoding="utf-8").strip()
        if Path(os.path.realpath(folder / back)) == dot:
            return folder
    with contextlib.suppress(OSError):
        config = (folder / "config").read_text(encoding="utf-8", errors="replace")
        for value in _WORKTREE.findall(config):
            if Path(os.path.realpath(folder / value.strip().strip('"'))) == root:
                return folder
    return None


_GITDIR = re.compile(r"^gitdir:\s*(.+?)\s*$", re.M)
_WORKTREE = re.compile(r"^\s*worktree\s*=\s*(.+?)\s*$", re.M | re.I)


def _nothing(rel: str) -> bool:
    return False


async def git_text(git: Git, *args: str) -> str | None:
    """The output of a git command that succeeded, else None."""
    result = await git.run(*args)
    return result.output if result.exit_code == 0 else None
