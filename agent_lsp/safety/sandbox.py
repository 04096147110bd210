"""The OS sandbox: bubblewrap on Linux, the boundary for everything the agent runs.

The whole file system read-only; writable only what a `Confinement` names (the workspace for a
command, the shadow copy for a test run, nothing for git); inside them `.git`, `.agent-lsp/`
and the editor settings folders read-only (a mount point: they cannot be renamed or replaced
either); a private `/tmp`; a private home with only toolchains shown back (`homeview`);
secret files of the workspace hidden, with no cap on their number (`secretscan`); host
sockets hidden; no network unless allowed; a fresh PID namespace (the agent's own environment
is not visible in /proc); all capabilities dropped; killed with its parent.

Where bwrap is missing or the kernel refuses namespaces there is no sandbox and the policy
fails closed (`SafetyPolicy(sandboxed=False)`); `probe()` says why, once per process."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.safety.homeview import private_home, toolchain_dirs
from agent_lsp.safety.paths import HOME_SECRET_DIRS, SECRET_DIRS, SECRET_NAMES
from agent_lsp.safety.secretscan import SecretScan, SecretScanError

__all__ = [
    "PROTECTED_NAMES",
    "Confinement",
    "Sandbox",
    "SandboxError",
    "SandboxProbe",
    "probe",
    "scrub_env",
]

# Tried in order: a user namespace with no capabilities (works unprivileged where allowed);
# without one (root, or a setuid bwrap), still with every capability dropped — as root
# without --cap-drop the sandboxed process could remount / read-write.
CANDIDATES: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--cap-drop", "ALL"),
    ("--cap-drop", "ALL"),
)
BWRAP_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/run/current-system/sw/bin")
_SOCKET_ROOTS = (Path("/run"), Path("/var/run"))
_WALK_CAP = 5_000  # socket folders only
# Read-only inside every writable root: code that runs outside the sandbox later (git, the
# editor, direnv) or that widens the agent's own permissions.
PROTECTED_NAMES = (
    ".git",
    ".agent-lsp",
    ".vscode",
    ".idea",
    ".zed",
    ".helix",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".dir-locals.el",
    ".dir-locals-2.el",
    ".envrc",
)
_SECRET_ENV = re.compile(
    r"API_?KEY|TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|PRIVATE_KEY|ACCESS_KEY|SESSION_KEY", re.I
)
_DROP_ENV = frozenset({"BASH_ENV", "ENV", "CDPATH", "SSH_AUTH_SOCK", "PROMPT_COMMAND"})
_probes: dict[str, SandboxProbe] = {}
_told: set[str] = set()


class SandboxError(RuntimeError):
    """The command cannot be confined as asked: it must not run."""


@dataclass(frozen=True)
class Confinement:
    """What one sandboxed program may touch."""

    writable: tuple[Path, ...] = ()  # folders it may write (the workspace, a shadow copy)
    visible: tuple[Path, ...] = ()  # folders whose secret files are hidden (the workspace…)
    network: bool = False
    show_secrets: bool = False  # the user allowed this command to read secret files
    scratch: tuple[Path, ...] = ()  # agent-lsp's own temporary folders (reports), writable


def scrub_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a command gets: no API keys, tokens or passwords (the model reads the
    output), and nothing that makes bash run code before the command (BASH_ENV, ENV)."""
    return {
        k: v
        for k, v in environ.items()
        if not (k in _DROP_ENV or k.startswith(("AGENT_LSP_", "OPENAI_")) or _SECRET_ENV.search(k))
    }


@dataclass(frozen=True)
class SandboxProbe:
    available: bool
    bwrap: str | None = None
    flags: tuple[str, ...] = ()
    reason: str = ""

    @property
    def mode(self) -> str:
        if not self.available:
            return "policy only"
        return "bwrap" + (" (user namespace)" if "--unshare-user" in self.flags else " (no userns)")


def _base(bwrap: str, flags: Sequence[str]) -> list[str]:
    return [bwrap, "--unshare-all", *flags, "--die-with-parent", "--new-session"]


def find_bwrap() -> str | None:
    """bwrap from a system folder, never through `PATH` (an activated virtualenv of the
    project could put a fake one first); `AGENT_LSP_BWRAP` names another place."""
    named = os.environ.get("AGENT_LSP_BWRAP")
    if named is not None:
        return named if Path(named).is_file() and os.access(named, os.X_OK) else None
    return shutil.which("bwrap", path=os.pathsep.join(BWRAP_DIRS))


def probe(bwrap: str | None = None, refresh: bool = False) -> SandboxProbe:
    """Whether commands can run under bwrap here, and with which flags (cached)."""
    if not sys.platform.startswith("linux"):
        return SandboxProbe(False, reason=f"no OS sandbox on {sys.platform}")
    path = bwrap or find_bwrap()
    if path is None:
        return SandboxProbe(False, reason="bubblewrap (bwrap) is not installed")
    if path in _probes and not refresh:
        return _probes[path]
    errors: list[str] = []
    result = SandboxProbe(False, path)
    for flags in CANDIDATES:
        argv = [*_base(path, flags), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        argv += ["--tmpfs", "/tmp", "--", "true"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=15, check=False, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(str(exc))
            continue
        if done.returncode == 0:
            result = SandboxProbe(True, path, flags, f"bwrap {' '.join(flags)}")
            break
        errors.append(done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}")
    if not result.available:
        result = SandboxProbe(
            False, path, reason=f"bwrap cannot create namespaces here: {errors[-1]}"
        )
    _probes[path] = result
    return result


def _sockets() -> list[Path]:
    found: list[Path] = []
    seen = 0
    for top in _SOCKET_ROOTS:
        if not top.is_dir() or top.is_symlink():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            seen += len(dirnames) + len(filenames)
            if seen > _WALK_CAP or dirpath.count("/") > 6:
                dirnames[:] = []
            for name in filenames + dirnames:
                p = Path(dirpath) / name
                try:
                    if stat.S_ISSOCK(p.lstat().st_mode):
                        found.append(p)
                except OSError:
                    continue
    return found


@dataclass
class Sandbox:
    """Wraps a command's argv in bwrap when the machine allows it."""

    enabled: bool = True
    network: bool = False  # always allow the network (settings sandbox.network)
    extra_writable: tuple[Path, ...] = ()
    home: Path = field(default_factory=Path.home)
    bwrap: str | None = None
    pass_env: tuple[str, ...] = ()  # settings sandbox.passEnv
    private_base: Path | None = None  # where private homes live (default ~/.cache/agent-lsp)
    toolchains: tuple[Path, ...] = ()  # more home folders to show back read-only
    _scans: dict[Path, SecretScan] = field(default_factory=dict[Path, SecretScan], repr=False)

    @property
    def available(self) -> bool:
        return self.status().available

    def status(self) -> SandboxProbe:
        if not self.enabled:
            return SandboxProbe(False, reason="the sandbox is turned off (sandbox.enabled)")
        return probe(self.bwrap)

    def notice(self) -> str | None:
        """A message the first time (per process and reason) commands run without a sandbox."""
        status = self.status()
        if status.available or status.reason in _told:
            return None
        _told.add(status.reason)
        return (
            f"No OS sandbox ({status.reason}): every command except a few vetted read-only "
            "ones asks first, and the tests ask once per task. Install bubblewrap (bwrap) "
            "to let the project's own tests and commands run confined."
        )

    def scanner(self, root: Path) -> SecretScan:
        real = Path(os.path.realpath(root))
        if real not in self._scans:
            self._scans[real] = SecretScan(real, self.home)
        return self._scans[real]

    def wrap(
        self,
        argv: Sequence[str],
        cwd: Path,
        confinement: Confinement,
        environ: Mapping[str, str] | None = None,
    ) -> list[str] | None:
        """bwrap + `argv`, or None when there is no sandbox. Raises `SandboxError` when the
        secret files of a visible folder cannot all be found (the command must not run)."""
        status = self.status()
        if not status.available or status.bwrap is None:
            return None
        args = _base(status.bwrap, status.flags)
        if confinement.network or self.network:
            args.append("--share-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        args += self._home(confinement, environ if environ is not None else os.environ)
        for sock in _sockets():
            args += ["--ro-bind", "/dev/null", str(sock)]
        writable = [Path(os.path.realpath(p)) for p in confinement.writable]
        for top in dict.fromkeys(Path(os.path.realpath(p)) for p in confinement.visible):
            if top.is_dir() and top not in writable:  # shown again above /tmp and the home
                args += ["--ro-bind", str(top), str(top)]
        for top in dict.fromkeys(writable):
            if top.is_dir():
                args += ["--bind", str(top), str(top)]
        for top in confinement.scratch:
            args += ["--bind", str(top), str(top)]
        for top in dict.fromkeys(writable):
            args += _read_only(top)
        home = Path(os.path.realpath(self.home))
        if any(home.is_relative_to(top) for top in writable):  # a workspace holding the home
            args += _home_secrets(home)
        if not confinement.show_secrets:
            for top in dict.fromkeys([*confinement.visible, *confinement.writable]):
                args += self._hide_secrets(Path(top))
        args += ["--chdir", str(cwd), "--", *argv]
        return args

    def _home(self, confinement: Confinement, environ: Mapping[str, str]) -> list[str]:
        """A private home (a folder of its own per workspace) with the toolchains shown back
        read-only; a workspace inside the home is bound again later, above it."""
        home = Path(os.path.realpath(self.home))
        if not home.is_dir() or home == Path("/"):
            return []
        roots = [Path(os.path.realpath(p)) for p in (*confinement.visible, *confinement.writable)]
        anchor = roots[0] if roots else home
        private = private_home(anchor, self.private_base)
        args = ["--bind", str(private), str(home)]
        for folder in toolchain_dirs(home, environ, self.toolchains):
            args += ["--ro-bind", str(folder), str(folder)]
        return args

    def _hide_secrets(self, top: Path) -> list[str]:
        if not top.is_dir():
            return []
        try:
            found = self.scanner(top).scan()
        except SecretScanError as exc:
            raise SandboxError(f"{exc}; not run (secret files could be exposed)") from exc
        args: list[str] = []
        for secret in found:
            if secret.is_dir():
                args += ["--tmpfs", str(secret)]
            elif secret.exists():
                args += ["--ro-bind", "/dev/null", str(secret)]
        return args


def _home_secrets(home: Path) -> list[str]:
    args: list[str] = []
    for rel in (*SECRET_DIRS, *HOME_SECRET_DIRS):
        if (home / rel).is_dir():
            args += ["--tmpfs", str(home / rel)]
    for name in SECRET_NAMES:
        if (home / name).is_file():
            args += ["--ro-bind", "/dev/null", str(home / name)]
    return args


def _read_only(root: Path) -> list[str]:
    """`.git`, `.agent-lsp/` and the editor settings stay read-only inside a writable root;
    being mount points, they cannot be renamed, replaced or deleted either."""
    with contextlib.suppress(OSError):  # the policy folder exists: none can be made inside
        (root / ".agent-lsp").mkdir(exist_ok=True)
    out: list[str] = []
    for name in PROTECTED_NAMES:
        p = root / name
        if p.exists() and not p.is_symlink():
            out += ["--ro-bind", str(p), str(p)]
        elif p.is_symlink():
            out += ["--ro-bind", "/dev/null", str(p)]
    return out


def created_protected(root: Path, before: set[str]) -> list[str]:
    """Protected names under `root` that did not exist in `before` (created by a command)."""
    return [n for n in PROTECTED_NAMES if n not in before and os.path.lexists(root / n)]


def existing_protected(root: Path) -> set[str]:
    return {n for n in PROTECTED_NAMES if os.path.lexists(root / n)}
