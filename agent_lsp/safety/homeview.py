"""What a sandboxed program sees of the user's home: a private folder of its own, with only
the toolchains found there shown back, read-only.

The home is where credentials live, and their kinds cannot be listed completely (`.npmrc`,
`~/.cargo/credentials.toml`, shell histories, a new tool's token file tomorrow). So the
sandbox does not hide known secrets from the home: it hides the home, and shows back what
runs code the project needs — interpreters, version managers, package caches and `PATH`
entries — never a credential folder or file."""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import adapters
from agent_lsp.safety.paths import HOME_SECRET_DIRS, SECRET_DIRS, is_secret_path
from agent_lsp.signing import user_folder

__all__ = [
    "HIDDEN_HOMES",
    "PACKAGE_STORES",
    "TOOLCHAIN_DIRS",
    "linked_toolchains",
    "own_folders",
    "own_folders_below",
    "private_home",
    "toolchain_dirs",
]

# Hidden whole inside the sandbox (every user's home, not only this one's).
HIDDEN_HOMES = (Path("/home"), Path("/root"))
# The host's /tmp, behind the sandbox's own (an empty tmpfs).
HIDDEN_TEMP = Path(os.path.realpath("/tmp"))

# Relative to the home: folders of interpreters, version managers and read-only caches.
TOOLCHAIN_DIRS = (
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".local/pipx",
    ".local/share/pipx",
    ".local/share/uv",
    ".local/share/virtualenvs",
    ".cache/pypoetry/virtualenvs",
    ".virtualenvs",
    ".conda",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    "mambaforge",
    ".nvm",
    ".volta",
    ".fnm",
    ".local/share/fnm",
    ".bun/bin",
    ".deno/bin",
    ".cargo/bin",
    ".rustup",
    "go/bin",
    "go/pkg/mod",
    "sdk",
    ".sdkman/candidates",
    ".asdf/installs",
    ".asdf/shims",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
)


def _private_base() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "agent-lsp" / "sandbox-home"


def own_folders() -> list[Path]:
    """agent-lsp's folders of this user, as this process finds them now (the signing key and
    the private homes in the cache folder, remembered servers in the state folder, the user's
    config): never shown to a sandboxed program."""
    home = Path.home()
    bases = [
        os.environ.get("XDG_CACHE_HOME") or str(home / ".cache"),
        os.environ.get("XDG_STATE_HOME") or str(home / ".local" / "state"),
        os.environ.get("XDG_CONFIG_HOME") or str(home / ".config"),
    ]
    folders = [Path(os.path.realpath(Path(b) / "agent-lsp")) for b in bases]
    folders.append(Path(os.path.realpath(user_folder())))
    return list(dict.fromkeys(folders))


MAX_LINKS = 2_000  # node_modules entries looked at per folder


# Relative to a home: where package managers keep the packages a `node_modules` links to.
PACKAGE_STORES = (
    ".local/share/pnpm",
    ".pnpm-store",
    ".cache/pnpm",
    "Library/pnpm",
    ".npm",
    ".yarn/berry",
    ".cache/yarn",
    ".bun/install",
)


def linked_toolchains(roots: Iterable[Path], home: Path | None = None) -> tuple[Path, ...]:
    """Where a project's dependencies link to outside it: a `.venv` that is a link (uv, a
    shared environment) to a virtualenv (one holding `pyvenv.cfg`), a `node_modules` that is
    a link to another `node_modules`, and the entries of `node_modules` that are links
    (pnpm's global store, a shared install) to an npm package (a folder holding
    `package.json`) inside a `node_modules` folder or a package store of the home, or to a
    `node_modules`'s `.bin` or scope folder — shown back read-only when they are in a home,
    like the toolchains (`toolchain_dirs` drops any credential folder among them). The links are the
    repository's: anything else they name (`~/.config/github-copilot`, the home itself) is
    not shown, nor a folder that is, holds or lies in one of agent-lsp's own."""
    home = Path(os.path.realpath(home or Path.home()))
    found: list[Path] = []
    for root in roots:
        for name in (".venv", "venv"):
            if (root / name).is_symlink():
                real = Path(os.path.realpath(root / name))
                if (real / "pyvenv.cfg").is_file():
                    found.append(real)
        found += [p for p in _linked_modules(root / "node_modules") if _module_part(p, home)]
    own = own_folders()
    return tuple(
        p
        for p in dict.fromkeys(found)
        if not any(p.is_relative_to(o) or o.is_relative_to(p) for o in own)
    )


def _module_part(folder: Path, home: Path) -> bool:
    """What a link in or for `node_modules` may show back: an installed npm package
    (`package.json` in a folder inside a `node_modules` or a package store), a whole
    `node_modules` folder, or one's scope folder (`@scope`) or `.bin`."""
    if not folder.is_dir():
        return False
    if folder.name == "node_modules":
        return True
    if folder.parent.name == "node_modules" and (
        folder.name == ".bin" or folder.name.startswith("@")
    ):
        return True
    if not (folder / "package.json").is_file():
        return False
    if "node_modules" in folder.parts[:-1]:
        return True
    return any(folder.is_relative_to(home / store) for store in PACKAGE_STORES)


def _linked_modules(folder: Path) -> list[Path]:
    """The link targets of a `node_modules` (itself a link, or its entries and the packages
    of its real scope folders)."""
    out: list[Path] = []
    if folder.is_symlink():
        out.append(Path(os.path.realpath(folder)))
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)[:MAX_LINKS]
    except OSError:
        return out
    for entry in entries:
        path = Path(entry.path)
        if entry.is_symlink():
            out.append(Path(os.path.realpath(path)))
        elif entry.name.startswith("@") and entry.is_dir(follow_symlinks=False):
            out += [Path(os.path.realpath(p)) for p in _scoped_links(path)]
    return out


def _scoped_links(scope: Path) -> list[Path]:
    try:
        return [Path(e.path) for e in os.scandir(scope) if e.is_symlink()][:MAX_LINKS]
    except OSError:
        return []


def private_home(root: Path, base: Path | None = None) -> Path:
    """The host folder mounted as the home of one workspace's sandboxed programs (their
    caches persist there between runs; nothing of the user's is in it)."""
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    folder = (base or _private_base()) / digest
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _unsafe(rel: Path, home: Path) -> bool:
    text = rel.as_posix()
    if any(
        text == d or text.startswith(d + "/") or d.startswith(text + "/") for d in HOME_SECRET_DIRS
    ):
        return True
    if any(p in SECRET_DIRS for p in rel.parts):
        return True
    return is_secret_path(home / rel, home)


def _owner(path: Path, home: Path) -> Path | None:
    """The hidden folder `path` is in: a home (this user's, or one under /home or /root), or
    /tmp (the sandbox has its own: a virtualenv made with `python -m venv /tmp/env` is shown
    back like one in the home), if any."""
    if path.is_relative_to(home):
        return home
    if path.is_relative_to(HIDDEN_TEMP):
        return HIDDEN_TEMP
    for top in HIDDEN_HOMES:
        if path.is_relative_to(top):
            rel = path.relative_to(top).parts
            return top / rel[0] if top == Path("/home") and rel else top
    return None


_ENV_KEYS = ("PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_ROOT", "NVM_DIR", "VOLTA_HOME")


def toolchain_dirs(
    home: Path, environ: Mapping[str, str], extra: Iterable[Path] = ()
) -> list[Path]:
    """`_toolchain_dirs` for the variables that matter, remembered (it runs per command)."""
    key = tuple(environ.get(k, "") for k in _ENV_KEYS)
    own = own_folders()  # never shown, nor anything in them (the key, the other homes)
    return [
        p for p in _cached(home, key, tuple(extra)) if not any(p.is_relative_to(o) for o in own)
    ]


def own_folders_below(shown: Iterable[Path]) -> list[Path]:
    """agent-lsp's own folders inside the folders `shown` (`~/.cache` a server may read holds
    `~/.cache/agent-lsp`, the signing key): the sandbox puts an empty folder over each."""
    shown = list(shown)
    return [
        o
        for o in own_folders()
        if o.is_dir() and any(o.is_relative_to(p) and o != p for p in shown)
    ]


@functools.lru_cache(maxsize=32)
def _cached(home: Path, key: tuple[str, ...], extra: tuple[Path, ...]) -> tuple[Path, ...]:
    return tuple(_toolchain_dirs(home, dict(zip(_ENV_KEYS, key, strict=True)), extra))


def _toolchain_dirs(
    home: Path, environ: Mapping[str, str], extra: Iterable[Path] = ()
) -> list[Path]:
    """The folders of the home and of /tmp shown back (read-only) inside the sandbox: the known
    toolchain folders, every `PATH` entry under either, the interpreter agent-lsp runs on, an
    active virtualenv or conda environment, and `extra` (say, where a project's `.venv` links
    to)."""
    home = Path(os.path.realpath(home))
    wanted: list[Path] = [home / d for d in TOOLCHAIN_DIRS]
    for entry in environ.get("PATH", "").split(os.pathsep):
        if entry and Path(entry).is_absolute():
            wanted.append(Path(entry))
    for key in _ENV_KEYS[1:]:
        if environ.get(key):
            wanted.append(Path(environ[key]))
    # agent-lsp's own interpreter and the adapters' helper scripts (gojson_tee, unittest_main)
    wanted += [Path(sys.prefix), Path(sys.base_prefix), Path(adapters.__file__).parent, *extra]
    out: list[Path] = []
    for path in wanted:
        real = Path(os.path.realpath(path))
        owner = _owner(real, home)
        if owner is None or real == owner or not real.exists():
            continue
        if _unsafe(real.relative_to(owner), owner):
            continue
        if not any(real.is_relative_to(p) for p in out):
            out = [p for p in out if not p.is_relative_to(real)] + [real]
    return sorted(out)
