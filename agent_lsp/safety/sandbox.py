"""The OS sandbox for commands: bubblewrap on Linux. The whole file system read-only, the
workspace (and the shadow workspace, extra roots) writable, its git hooks and config and the
`.agent-lsp` folder read-only, a private /tmp, the credential folders of the home and secret
files of the workspace hidden, host sockets hidden, no network unless allowed, a fresh PID
namespace (the agent's own environment is not visible in /proc), all capabilities dropped.

Where bwrap is missing or the kernel refuses namespaces the policy alone applies; `probe()`
says why, once per process."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.safety.paths import HOME_SECRET_DIRS, SECRET_DIRS, SECRET_NAMES, is_secret_path

__all__ = ["Sandbox", "SandboxProbe", "probe", "scrub_env"]

# Tried in order: a user namespace with no capabilities (works unprivileged where allowed);
# without one (root, or a setuid bwrap), still with every capability dropped — as root
# without --cap-drop the sandboxed process could remount / read-write.
CANDIDATES: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--cap-drop", "ALL"),
    ("--cap-drop", "ALL"),
)
_SOCKET_ROOTS = (Path("/run"), Path("/var/run"))
_WALK_CAP = 5_000
_SECRET_ENV = re.compile(
    r"API_?KEY|TOKEN|SECRET|PASSW(OR)?D|CREDENTIAL|PRIVATE_KEY|ACCESS_KEY|SESSION_KEY", re.I
)
_DROP_ENV = frozenset({"BASH_ENV", "ENV", "CDPATH", "SSH_AUTH_SOCK", "PROMPT_COMMAND"})
_probes: dict[str, SandboxProbe] = {}
_told: set[str] = set()


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


def probe(bwrap: str | None = None, refresh: bool = False) -> SandboxProbe:
    """Whether commands can run under bwrap here, and with which flags (cached)."""
    if not sys.platform.startswith("linux"):
        return SandboxProbe(False, reason=f"no OS sandbox on {sys.platform}")
    path = bwrap or shutil.which("bwrap")
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


def _secrets_in(top: Path, home: Path) -> list[Path]:
    """Secret files and folders inside a writable root (a capped walk)."""
    out: list[Path] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(top):
        seen += len(dirnames) + len(filenames)
        if seen > _WALK_CAP:
            break
        for name in list(dirnames):
            if name in SECRET_DIRS:
                out.append(Path(dirpath) / name)
                dirnames.remove(name)
            elif name in (".git", "node_modules", ".venv", "venv"):
                dirnames.remove(name)
        out += [
            Path(dirpath) / n
            for n in filenames
            if is_secret_path(Path(dirpath) / n, home) and not (Path(dirpath) / n).is_symlink()
        ]
    return out


@dataclass
class Sandbox:
    """Wraps a command's argv in bwrap when the machine allows it."""

    enabled: bool = True
    network: bool = False  # always allow the network (settings sandbox.network)
    extra_writable: tuple[Path, ...] = ()
    home: Path = field(default_factory=Path.home)
    bwrap: str | None = None

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
        return f"OS sandbox unavailable ({status.reason}): commands are limited by the policy only"

    def wrap(
        self,
        argv: Sequence[str],
        root: Path,
        cwd: Path,
        network: bool = False,
        show_secrets: bool = False,
        writable: Iterable[Path] = (),
    ) -> list[str] | None:
        """bwrap + `argv`, or None when there is no sandbox (run `argv` as it is)."""
        status = self.status()
        if not status.available or status.bwrap is None:
            return None
        args = _base(status.bwrap, status.flags)
        if network or self.network:
            args.append("--share-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        home = Path(os.path.realpath(self.home))
        for rel in (*SECRET_DIRS, *HOME_SECRET_DIRS):
            if (home / rel).is_dir():
                args += ["--tmpfs", str(home / rel)]
        for name in SECRET_NAMES:
            if (home / name).is_file():
                args += ["--ro-bind", "/dev/null", str(home / name)]
        for sock in _sockets():
            args += ["--ro-bind", "/dev/null", str(sock)]
        roots = [Path(os.path.realpath(p)) for p in (root, *self.extra_writable, *writable)]
        for top in dict.fromkeys(roots):
            if top.is_dir():
                args += ["--bind", str(top), str(top)]
        args += self._read_only(roots[0])
        if not show_secrets:
            for top in dict.fromkeys(roots):
                for secret in _secrets_in(top, home) if top.is_dir() else []:
                    args += (
                        ["--tmpfs", str(secret)]
                        if secret.is_dir()
                        else ["--ro-bind", "/dev/null", str(secret)]
                    )
        args += ["--chdir", str(cwd), "--", *argv]
        return args

    def _read_only(self, root: Path) -> list[str]:
        """Git hooks and config (code that runs outside the sandbox later) and the policy
        folder stay read-only inside the writable workspace."""
        git = root / ".git"
        policy_dir = root / ".agent-lsp"
        try:  # mount points for what the command must not create either
            if git.is_dir():
                (git / "hooks").mkdir(exist_ok=True)
            policy_dir.mkdir(exist_ok=True)
        except OSError:
            pass
        out: list[str] = []
        for p in (git / "hooks", git / "config", git / "info", policy_dir):
            if p.exists() and not p.is_symlink():
                out += ["--ro-bind", str(p), str(p)]
        return out
