"""Describe a project for the model and the user: toolchains, interpreters, environment."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from adapters.detect import Found, find_toolchains
from adapters.go_runner import module_path, race_requested
from adapters.node import node_project
from adapters.pyenv import python_env

__all__ = ["describe_project"]

LOOKED_FOR = (
    "pyproject.toml, pytest.ini, setup.cfg, tox.ini, conftest.py, test_*.py, manage.py, "
    "unittest test*.py, package.json with jest or vitest, go.mod; in the root and first-level "
    "subfolders"
)
_PYTHON_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile")
_NOTABLE = frozenset(
    {"Makefile", "CMakeLists.txt", "Cargo.toml", "pom.xml", "build.gradle", "build.gradle.kts"}
    | {"Gemfile", "composer.json", "mix.exs", "Package.swift", "deno.json", "package.json"}
    | {"go.mod", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile"}
    | {"tox.ini", "noxfile.py", "manage.py", "meson.build", "build.zig", "stack.yaml"}
)


def _python_line(root: Path, found: Found) -> str:
    env = python_env(root)
    runner = found.adapter.name
    return (
        f"Python project; tests: {runner} (found {found.reason}); interpreter: {env.python}; "
        f"{env.describe()}"
    )


def _node_line(root: Path) -> str:
    project = node_project(root)
    return project.describe() if project is not None else "Node project"


def _go_line(root: Path) -> str:
    go = shutil.which("go")
    module = module_path(root) or "?"
    tool = f"go: {go}" if go else "go: not on PATH (install Go, e.g. `apt-get install golang-go`)"
    race = race_requested(root)
    race_text = f"-race as {race} asks (when cgo works)" if race else "no -race (not asked for)"
    return (
        f"Go module {module}; tests: go test -json ./... (found go.mod; {race_text}; "
        f"GOPROXY=off unless set); {tool}"
    )


def _line(root: Path, found: Found) -> str:
    folder = root / found.folder if found.folder else root
    if found.kind == "python":
        text = _python_line(folder, found)
    elif found.kind == "node":
        text = _node_line(folder)
    else:
        text = _go_line(folder)
    return f"{found.folder}/: {text}" if found.folder else text


def _probe(root: Path) -> str:
    """What was looked for and what was found instead, for a project without a test runner."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        entries = []
    seen = [e.name + ("/" if e.is_dir() else "") for e in entries if e.name in _NOTABLE]
    dirs = [e.name + "/" for e in entries if e.is_dir() and not e.name.startswith(".")]
    found = ", ".join([*seen, *dirs[:8]]) or "nothing notable"
    python = any((root / m).is_file() for m in _PYTHON_MARKERS) or next(root.glob("*.py"), None)
    kind = "Python project; " if python else ""
    return f"{kind}no test runner found (looked for {LOOKED_FOR}; found: {found})"


def describe_project(root: Path) -> str:
    """A profile of the project: one line per toolchain (language, test runner and why,
    interpreter, virtualenv or node_modules state), or a probe report when none is found."""
    found = find_toolchains(root)
    if not found:
        return _probe(root)
    return "\n".join(_line(root, f) for f in found)
