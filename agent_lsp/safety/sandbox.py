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

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.safety.homeview import (
    HIDDEN_HOMES,
    linked_toolchains,
    own_folders,
    own_folders_below,
    private_home,
    toolchain_dirs,
)
from agent_lsp.safety.protect import PROTECTED_NAMES, guarded_below, read_only_args
from agent_lsp.safety.secretscan import Found, SecretScan, SecretScanError
from agent_lsp.signing import key_path

__all__ = [
    "PROTECTED_NAMES",
    "Confinement",
    "Sandbox",
    "SandboxError",
    "SandboxProbe",
    "Wrapped",
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


def _run_folders(network: bool) -> list[str]:
    """Host sockets live under /run (Docker, D-Bus …): a private /run, with only the resolver
    shown back when the command has the network."""
    args: list[str] = []
    for top in (Path("/run"), Path("/var/run")):
        if top.is_dir() and not top.is_symlink():
            args += ["--tmpfs", str(top)]
    if network:
        resolv = Path(os.path.realpath("/etc/resolv.conf"))
        if resolv.is_relative_to("/run") and resolv.exists():
            args += ["--ro-bind", str(resolv.parent), str(resolv.parent)]
    return args


@dataclass(frozen=True)
class Wrapped:
    """A command ready to run: its argv and what the sandbox found (for the clean-up)."""

    argv: list[str]
    gits: dict[Path, list[Path]]  # writable root -> every protected entry under it before the run
    masks: tuple[Path, ...] = ()  # empty read-only folders made where protected names were not


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
    hide: Callable[[str], bool] | None = None  # more paths to hide (deny path rules)
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
            self._scans[real] = SecretScan(real, self.home, hide=self.hide)
        return self._scans[real]

    def wrap(
        self,
        argv: Sequence[str],
        cwd: Path,
        confinement: Confinement,
        environ: Mapping[str, str] | None = None,
        *,
        server: bool = False,
    ) -> Wrapped | None:
        """bwrap + `argv`, or None when there is no sandbox. Raises `SandboxError` when the
        command cannot be confined as asked (the secret files of a visible folder could not
        all be found, or a workspace holds the home). `server`: a program that keeps running
        (an MCP server): `cwd` is an empty folder made for it inside the sandbox, and each
        protected name missing at the top of a writable root gets an empty read-only folder
        for the program's whole life (`Wrapped.masks`: their mount points, left on the host
        until the caller removes them once the program ended) — it cannot create one there,
        ever; below the top, what it makes is removed afterwards, as after a command."""
        status = self.status()
        if not status.available or status.bwrap is None:
            return None
        network = confinement.network or self.network
        home = Path(os.path.realpath(self.home))
        visible = [Path(os.path.realpath(p)) for p in confinement.visible]
        writable = [Path(os.path.realpath(p)) for p in confinement.writable]
        for top in (*visible, *writable):
            if home.is_relative_to(top):
                raise SandboxError(f"{top} holds the home folder {home}: it cannot be confined")
        args = _base(status.bwrap, status.flags)
        if network:
            args.append("--share-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        args += _run_folders(network)
        args += self._home(confinement, environ if environ is not None else os.environ)
        for top in dict.fromkeys(visible):
            if top.is_dir() and top not in writable:  # shown again above /tmp and the homes
                args += ["--ro-bind", str(top), str(top)]
        for top in dict.fromkeys(writable):
            if top.is_dir():
                args += ["--bind", str(top), str(top)]
        for top in confinement.scratch:
            args += ["--bind", str(top), str(top)]
        args += _own_folders_hidden(home, (*visible, *writable, *confinement.scratch))
        found = {top: self._scan(top) for top in dict.fromkeys(visible) if top.is_dir()}
        gits: dict[Path, list[Path]] = {}
        scratch = confinement.scratch[0] if confinement.scratch else None
        masks: list[Path] = []
        for top in dict.fromkeys(writable):
            gits[top] = self._gits_under(top, found)
            args += read_only_args(top, gits[top], scratch)
            if server and top.is_dir():
                missing = [top / n for n in PROTECTED_NAMES if not os.path.lexists(top / n)]
                for path in missing:
                    args += ["--tmpfs", str(path), "--remount-ro", str(path)]
                masks += missing
        if not confinement.show_secrets:
            for result in found.values():
                args += _hide(result.secrets)
        if server:
            args += ["--dir", str(cwd)]
        args += ["--chdir", str(cwd), "--", *argv]
        return Wrapped(args, gits, tuple(masks))

    def gits_after(self, top: Path) -> list[Path]:
        """Every protected entry (`.git`, editor settings, `.envrc`) under a writable root now
        (after a command ran)."""
        return self._gits_under(top, {})

    def _gits_under(self, top: Path, found: Mapping[Path, Found]) -> list[Path]:
        result = found.get(top) or self._scan(top)
        hidden_folders = [p for p in result.secrets if p.is_dir() and not p.is_symlink()]
        return [*result.gits, *result.guarded, *guarded_below(hidden_folders)]

    def _scan(self, top: Path) -> Found:
        try:
            return self.scanner(top).scan()
        except SecretScanError as exc:
            raise SandboxError(f"{exc}; not run (secret files could be exposed)") from exc

    def _home(self, confinement: Confinement, environ: Mapping[str, str]) -> list[str]:
        """Every home folder hidden (`/home`, `/root`), then a private home (a folder of its
        own per workspace) where the user's is, with the toolchains shown back read-only; a
        workspace inside a home is bound again later, above it."""
        home = Path(os.path.realpath(self.home))
        args: list[str] = []
        for top in HIDDEN_HOMES:
            if top.is_dir() and not top.is_symlink():
                args += ["--tmpfs", str(top)]
        roots = [Path(os.path.realpath(p)) for p in (*confinement.visible, *confinement.writable)]
        anchor = roots[0] if roots else home
        private = private_home(anchor, self.private_base)
        base = private.parent
        if not base.is_relative_to(home) and not any(base.is_relative_to(h) for h in HIDDEN_HOMES):
            args += ["--tmpfs", str(base)]  # the other workspaces' private homes
        if home.is_dir() and home != Path("/"):
            args += ["--bind", str(private), str(home)]
        linked = linked_toolchains(roots, home)
        shown = toolchain_dirs(home, environ, (*self.toolchains, *linked))
        for folder in shown:
            args += ["--ro-bind", str(folder), str(folder)]
        for folder in own_folders_below(shown):  # a shown `~/.cache` keeps agent-lsp's out
            args += ["--tmpfs", str(folder)]
        return args


def _own_folders_hidden(home: Path, shown: Sequence[Path]) -> list[str]:
    """agent-lsp's own folders of this user (the signing key, remembered servers, the user's
    config) hidden where the hidden homes do not already hide them (`XDG_CACHE_HOME` and the
    like set outside the home): a program that read the key could sign records agent-lsp
    would then trust. A folder holding a root the command must see keeps the root; the key
    file in it is still hidden."""
    args: list[str] = []
    key = Path(os.path.realpath(key_path()))
    for folder in own_folders():
        if not folder.is_dir() or folder.is_symlink():
            continue
        if folder.is_relative_to(home) or any(folder.is_relative_to(h) for h in HIDDEN_HOMES):
            continue
        if any(top.is_relative_to(folder) for top in shown):
            if key.is_relative_to(folder) and key.exists():
                args += ["--ro-bind", "/dev/null", str(key)]
            continue
        args += ["--tmpfs", str(folder)]
    return args


def _hide(secrets: Sequence[Path]) -> list[str]:
    args: list[str] = []
    for secret in secrets:
        if secret.is_dir() and not secret.is_symlink():
            args += ["--tmpfs", str(secret)]
        elif secret.exists() and not secret.is_symlink():
            args += ["--ro-bind", "/dev/null", str(secret)]
    return args
