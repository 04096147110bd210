"""Every path a tool touches, resolved the way the OS would: `~`, `..`, symlinks, absolute paths,
Windows drive, device and UNC forms. A path is usable when it stays inside the workspace or one
of the configured extra roots; secret files need the user's permission even inside; git
internals, agent-lsp's own folder and the editor settings are never written by the agent's
file tools."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "HOME_SECRET_DIRS",
    "HOME_SECRET_FILES",
    "PROTECTED_DIRS",
    "PROTECTED_NAMES",
    "SECRET_DIRS",
    "SECRET_NAMES",
    "PathError",
    "PathGuard",
    "Resolved",
    "is_protected_rel",
    "is_secret_path",
    "is_startup_file",
]

SECRET_NAMES = frozenset(
    {".netrc", "_netrc", ".pgpass", ".git-credentials", ".vault-token", ".pypirc", ".htpasswd"}
    # package managers, clouds, databases, infrastructure
    | {".npmrc", ".yarnrc", ".yarnrc.yml", ".envrc", "credentials", "credentials.json"}
    | {".terraformrc", "terraform.rc", ".my.cnf", ".boto", ".s3cfg", ".dockercfg"}
    # shell and REPL histories (any `*_history` too): commands typed with tokens in them
    | {".bash_history", ".zsh_history", ".sh_history", ".history", ".histfile"}
    | {".python_history", ".node_repl_history", ".psql_history", ".mysql_history"}
    | {".sqlite_history", ".lesshst", ".irb_history", ".rediscli_history"}
)
SECRET_SUFFIXES = (".env", ".tfvars", ".tfvars.json", "_history")  # config/prod.env, ...
SECRET_JSON_PREFIXES = ("service-account", "service_account")  # service-account*.json
KEY_NAMES = frozenset(
    {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk", "identity"}
)
KEY_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".ppk", ".jks", ".keystore", ".kdbx")
SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg"})
# Credential folders of the user's home (relative to it).
HOME_SECRET_DIRS = (
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".config/gh",
    ".config/agent-lsp",
    ".password-store",
    ".local/share/keyrings",
    ".config/yarn",
    ".terraform.d",
    ".config/rclone",
)
# Credential files of the user's home (relative to it): the same names in a project are not.
HOME_SECRET_FILES = (
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".config/hub",
)
STARTUP_NAMES = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc"}
    | {".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc"}
    | {".login", ".logout", ".xprofile", ".xsessionrc", ".inputrc", ".pam_environment"}
)
STARTUP_PATHS = ("/etc/profile", "/etc/bash.bashrc", "/etc/environment", "/etc/zsh")
STARTUP_DIRS = ("/etc/profile.d", ".config/fish", ".config/environment.d")
# Never written by the agent's file tools, anywhere in a root: git internals, agent-lsp's own
# folder (config, policy, init.d, memory, state: the harness writes those itself), and the
# editor settings that configure the agent or run code when a folder is opened.
PROTECTED_DIRS = frozenset({".git", ".agent-lsp", ".vscode", ".idea", ".zed", ".helix"})
PROTECTED_NAMES = frozenset(
    {".nvim.lua", ".nvimrc", ".exrc", ".dir-locals.el", ".dir-locals-2.el", ".envrc"}
)
# Kept for callers of the old table: the policy and project config (inside PROTECTED_DIRS).
PROTECTED_FILES = (
    (".agent-lsp", "policy.toml"),
    (".agent-lsp", "config.toml"),
)
SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"}
    | {"/dev/random", "/dev/urandom", "/dev/full"}
)
WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"com{i}" for i in range(10)}
    | {f"lpt{i}" for i in range(10)}
)
_DRIVE = re.compile(r"^[A-Za-z]:")
_SHORT_NAME = re.compile(r"~\d")


class PathError(ValueError):
    """A path form that is refused outright (device, UNC, NUL byte, unknown user...)."""


def _fold(name: str, windows: bool) -> str:
    """How the file system compares a name: case-insensitive and trailing dots/spaces dropped
    on Windows (and macOS), exact elsewhere."""
    return name.rstrip(". ").casefold() if windows else name


def is_secret_path(path: PurePosixPath | Path, home: Path, windows: bool = False) -> bool:
    """`.env*` and `*.env`, private keys, credential and history files, `.ssh` / `.aws` /
    `.gnupg` anywhere, and the credential folders and files of the user's home."""
    # names compared case-insensitively everywhere: `.ENV` is `.env` on a file system that
    # folds case (macOS, Windows), and a secret under another case is a secret all the same
    parts = [_fold(p, windows).casefold() for p in path.parts]
    if not parts:
        return False
    name = parts[-1]
    if name in SECRET_NAMES or name in KEY_NAMES or name.endswith(KEY_SUFFIXES + SECRET_SUFFIXES):
        return True
    if name.startswith(".env"):  # .env.example too: a path rule may allow it
        return True
    if name.startswith(SECRET_JSON_PREFIXES) and name.endswith(".json"):
        return True
    if any(p in SECRET_DIRS for p in parts[:-1]) or name in SECRET_DIRS:
        return True
    if not path.is_absolute():
        return False  # a bare name or a relative path is never under the home
    text = path.as_posix()
    if windows:
        text = text.casefold()
    return any(
        text == top or text.startswith(top + "/") for top in _home_secret_tops(str(home), windows)
    )


@functools.cache
def _home_secret_tops(home: str, windows: bool) -> tuple[str, ...]:
    """The home's credential folders and files as path strings (computed once per home)."""
    tops = tuple(
        PurePosixPath(Path(home).as_posix(), d).as_posix()
        for d in (*HOME_SECRET_DIRS, *HOME_SECRET_FILES)
    )
    return tuple(t.casefold() for t in tops) if windows else tops


def is_startup_file(path: PurePosixPath | Path, home: Path) -> bool:
    """Shell start-up files: writing them runs code in every later shell."""
    if path.name in STARTUP_NAMES:
        return True
    text = path.as_posix()
    if any(text == p or text.startswith(p + "/") for p in STARTUP_PATHS):
        return True
    return any(_under(path, Path(d) if d.startswith("/") else home / d) for d in STARTUP_DIRS)


def is_protected_rel(rel: Sequence[str], windows: bool = False) -> bool:
    """Git internals, agent-lsp's own folder and the editor settings folders (any component),
    and the editor and direnv files that run code (any folder) — their names compared without
    regard to case everywhere, as secret names are: `.GIT/config` is git's config on a file
    system that folds case (macOS's default), and refusing a `.VSCode` elsewhere costs
    nothing."""
    folded = [_fold(p, windows).casefold() for p in rel]
    if not folded:
        return False
    return folded[-1] in PROTECTED_NAMES or any(p in PROTECTED_DIRS for p in folded)


def _under(path: PurePosixPath | Path, top: Path, windows: bool = False) -> bool:
    if windows:
        text, head = path.as_posix().casefold(), top.as_posix().casefold()
        return PurePosixPath(text).is_relative_to(PurePosixPath(head))
    return PurePosixPath(path.as_posix()).is_relative_to(PurePosixPath(top.as_posix()))


@dataclass(frozen=True)
class Resolved:
    """A resolved path and what it is."""

    raw: str
    path: Path  # symlinks and `..` resolved
    inside: bool  # in the workspace or an extra root
    in_root: bool  # in the workspace itself
    secret: bool
    protected: bool  # never written by the agent
    device: bool  # a device (not one of the harmless ones like /dev/null)
    startup: bool  # a shell start-up file

    @property
    def safe_device(self) -> bool:
        return self.path.as_posix() in SAFE_DEVICES or self.path.as_posix().startswith("/dev/fd/")


class PathGuard:
    """Resolves paths against a workspace root (plus extra roots) for one user's home."""

    def __init__(
        self,
        root: Path,
        extra_roots: Iterable[Path] = (),
        home: Path | None = None,
        windows: bool | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.home = Path(os.path.realpath(home if home is not None else Path.home()))
        self.windows = os.name == "nt" if windows is None else windows
        self.extra_roots = tuple(Path(os.path.realpath(r.expanduser())) for r in extra_roots)

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.root, *self.extra_roots)

    def expand_user(self, text: str) -> str:
        """`~` and `~/x` to the home folder; `~user` to that user's home (POSIX)."""
        if not text.startswith("~"):
            return text
        head, sep, tail = text.partition("/")
        if head == "~":
            return self.home.as_posix() + sep + tail
        if self.windows:
            raise PathError(f"{text}: unknown home folder")
        try:
            import pwd

            home = pwd.getpwnam(head[1:]).pw_dir
        except (KeyError, ImportError) as exc:
            raise PathError(f"{text}: unknown user {head[1:]!r}") from exc
        return home + sep + tail

    def _check_form(self, raw: str) -> str:
        if not raw or not raw.strip():
            raise PathError("empty path")
        if "\0" in raw:
            raise PathError("NUL byte in path")
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise PathError("a path that is not valid text") from exc
        text = raw.replace("\\", "/")
        if text.startswith(("//?/", "//./", "/??/")):
            raise PathError(f"{raw}: Windows device paths are not allowed")
        if text.startswith("//") and not text.startswith("///"):
            raise PathError(f"{raw}: network (UNC) paths are not allowed")
        if _DRIVE.match(text):
            raise PathError(f"{raw}: Windows drive paths are not allowed")
        if self.windows:
            for part in PurePosixPath(text).parts:
                stem = part.split(".")[0].rstrip(" ").casefold()
                if stem in WINDOWS_DEVICES:
                    raise PathError(f"{raw}: Windows device name {part!r}")
                if ":" in part:
                    raise PathError(f"{raw}: alternate data streams are not allowed")
                if _SHORT_NAME.search(part):
                    raise PathError(f"{raw}: 8.3 short names are not allowed")
        return text

    def resolve(self, raw: str, base: Path | None = None) -> Resolved:
        """Resolve `raw` (relative to `base`, default the root); raises `PathError` for refused
        forms. Whether the result is usable is for the caller to decide from its flags."""
        text = self.expand_user(self._check_form(raw))
        candidate = Path(text)
        if not candidate.is_absolute():
            candidate = (base or self.root) / candidate
        lexical = Path(os.path.normpath(candidate))
        try:
            real = Path(os.path.realpath(candidate))
        except (OSError, RuntimeError) as exc:  # pragma: no cover - realpath is non-strict
            raise PathError(f"{raw}: {exc}") from exc
        return self._describe(raw, real, lexical)

    def describe(self, path: Path) -> Resolved:
        """The flags of an already absolute path (symlinks resolved here)."""
        return self._describe(str(path), Path(os.path.realpath(path)), Path(os.path.normpath(path)))

    def _describe(self, raw: str, real: Path, lexical: Path) -> Resolved:
        in_root = real.is_relative_to(self.root)
        inside = in_root or any(real.is_relative_to(r) for r in self.extra_roots)
        secret = any(is_secret_path(p, self.home, self.windows) for p in (real, lexical))
        # the user's own agent-lsp config and trust list: never written by the agent
        protected = any(_under(p, self.home / ".config/agent-lsp") for p in (real, lexical))
        for p in {real, lexical}:
            for top in self.roots:
                if p.is_relative_to(top) and is_protected_rel(
                    p.relative_to(top).parts, self.windows
                ):
                    protected = True
        posix = real.as_posix()
        device = posix.startswith("/dev/") and not (
            posix in SAFE_DEVICES or posix.startswith(("/dev/fd/", "/dev/pts/"))
        )
        startup = any(is_startup_file(p, self.home) for p in (real, lexical))
        return Resolved(raw, real, inside, in_root, secret, protected, device, startup)

    def is_secret(self, path: Path) -> bool:
        return self.describe(path).secret
