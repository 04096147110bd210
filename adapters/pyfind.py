"""Where a project's Python lives besides a plain virtualenv: the folders searched (the project
root, then those above it up to the repository's top or the enclosing project), hatch's
``path``, pdm's ``.pdm-python`` and the pyenv version named by ``.python-version``."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

__all__ = ["hatch_path", "pdm_python", "project_dirs", "pyenv_python"]

_MAX_UP = 8


_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "uv.lock", "poetry.lock")


def project_dirs(root: Path) -> list[Path]:
    """``root``, then its parents up to the repository's top (the folder with ``.git``), so a
    subfolder finds the project's environment; outside a repository up to the nearest parent
    with a Python project marker (pyproject.toml, setup.py, ...), if any. Never the home
    folder or ``/``."""
    root = root.resolve()
    home = Path.home().resolve()
    if (root / ".git").exists():
        return [root]
    parents: list[Path] = []
    for parent in list(root.parents)[:_MAX_UP]:
        if parent in (home, Path(parent.anchor)):
            break
        parents.append(parent)
        if (parent / ".git").exists():
            return [root, *parents]
    for i, parent in enumerate(parents):
        if any((parent / marker).is_file() for marker in _MARKERS):
            return [root, *parents[: i + 1]]
    return [root]


def hatch_path(folder: Path) -> Path | None:
    """``[tool.hatch.envs.default] path`` (or hatch.toml's ``[envs.default]``), if set."""
    for name, keys in (("pyproject.toml", ("tool", "hatch", "envs")), ("hatch.toml", ("envs",))):
        try:
            data: object = tomllib.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        for key in (*keys, "default", "path"):
            data = data.get(key) if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType]
        if isinstance(data, str) and data:
            return folder / data
    return None


def pdm_python(root: Path) -> str | None:
    """The interpreter pdm recorded in ``.pdm-python``."""
    for folder in project_dirs(root):
        try:
            text = (folder / ".pdm-python").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text and Path(text).is_file():
            return text
    return None


def pyenv_python(root: Path) -> tuple[str, str] | None:
    """(interpreter, version) of the pyenv version a ``.python-version`` file names."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    versions = pyenv_root / "versions"
    for folder in project_dirs(root):
        try:
            names = (folder / ".python-version").read_text(encoding="utf-8").split()
        except (OSError, UnicodeDecodeError):
            continue
        for name in names:
            exact = versions / name / "bin" / "python"
            if exact.is_file():
                return str(exact), name
            prefixed = sorted(
                (p for p in versions.glob(f"{name}.*") if (p / "bin/python").is_file()),
                key=lambda p: [int(x) if x.isdigit() else 0 for x in p.name.split(".")],
            )
            if prefixed:
                return str(prefixed[-1] / "bin/python"), prefixed[-1].name
        return None
    return None
