"""Which toolchains a project has: its root and its packages (monorepos), each with a reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from adapters.base import ToolchainAdapter
from adapters.django_runner import DjangoRunner
from adapters.go_runner import GoTestRunner
from adapters.jest_runner import JestRunner
from adapters.multi import FolderAdapter
from adapters.node import node_project
from adapters.nodetest_runner import NodeTestRunner
from adapters.pytest_runner import PytestRunner
from adapters.unittest_runner import UnittestRunner, has_unittest_tests
from adapters.vitest_runner import VitestRunner
from adapters.workspaces import workspace_layout

__all__ = ["Found", "detect_toolchains", "find_toolchains", "python_choice"]

_DEP_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "Pipfile", "noxfile.py")
_PYTEST_WORD = re.compile(r"(?<![\w.-])pytest(?![\w.-]*\.ini_options)\b")
_PYTEST_DJANGO = re.compile(r"pytest[-_]django|DJANGO_SETTINGS_MODULE")


@dataclass(frozen=True)
class Found:
    """A toolchain found in ``folder`` ("" for the project root)."""

    kind: str  # "python", "node" or "go"
    folder: str
    adapter: ToolchainAdapter
    reason: str


def _read(path: Path, limit: int = 200_000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:limit]
    except OSError:
        return ""


def _requirement_files(root: Path) -> list[Path]:
    files = sorted(root.glob("requirements*.txt"))
    if (root / "requirements").is_dir():
        files += sorted((root / "requirements").glob("*.txt"))
    return files


def _declares(root: Path, pattern: re.Pattern[str]) -> str | None:
    for path in [*(root / name for name in _DEP_FILES), *_requirement_files(root)]:
        if pattern.search(_read(path)):
            return path.name
    return None


def python_choice(root: Path) -> tuple[ToolchainAdapter, str] | None:
    """The Python runner for ``root`` and why: Django's for manage.py (unless pytest-django),
    pytest when configured or declared, unittest for unittest-only suites, else pytest."""
    pytest_reason = PytestRunner().detect_reason(root)
    weak = pytest_reason is None or pytest_reason.startswith("test files such as")
    if (root / "manage.py").is_file():
        via = _declares(root, _PYTEST_DJANGO) or (
            "pytest.ini" if _PYTEST_DJANGO.search(_read(root / "pytest.ini")) else None
        )
        if via is None:
            return DjangoRunner(), "manage.py"
        return PytestRunner(), f"manage.py with pytest-django in {via}"
    if pytest_reason is not None and not weak:
        return PytestRunner(), pytest_reason
    declared = _declares(root, _PYTEST_WORD)
    unittest_file = has_unittest_tests(root)
    if declared is not None and (pytest_reason is not None or unittest_file is not None):
        found = pytest_reason or f"test files such as {unittest_file}"
        return PytestRunner(), f"{found}; pytest declared in {declared}"
    if unittest_file is not None:
        return UnittestRunner(), f"unittest tests such as {unittest_file}, pytest not declared"
    if pytest_reason is not None:
        return PytestRunner(), pytest_reason
    return None


def _node_choice(root: Path) -> tuple[ToolchainAdapter, str] | None:
    project = node_project(root)
    if project is None or project.runner is None:
        return None
    adapters: dict[str, ToolchainAdapter] = {"jest": JestRunner(), "node-test": NodeTestRunner()}
    return adapters.get(project.runner, VitestRunner()), project.runner_reason


def _folder(root: Path, folder: str) -> list[Found]:
    path = root / folder if folder else root
    found: list[Found] = []
    python = python_choice(path)
    if python is not None:
        found.append(Found("python", folder, python[0], python[1]))
    node = _node_choice(path)
    if node is not None:
        found.append(Found("node", folder, node[0], node[1]))
    if GoTestRunner().detect(path):
        found.append(Found("go", folder, GoTestRunner(), "go.mod"))
    return found


def _weak(found: Found) -> bool:
    return found.reason.startswith("test files such as")


def _encloses(outer: str, inner: str) -> bool:
    return outer == "" or inner.startswith(outer + "/")


def find_toolchains(root: Path) -> list[Found]:
    """Toolchains of ``root`` and of its packages (:func:`adapters.workspaces.workspace_layout`).

    Every Go module is separate. A package's Python or Node toolchain is left out when an
    enclosing folder has one of the same kind (pytest and jest collect tests from subfolders),
    unless a workspace manifest declares the package: the root's Node runner then gives way
    to the packages' own. A root pytest found only by its test files gives way to the Python
    projects of its subfolders."""
    layout = workspace_layout(root)
    members = [f for folder in layout.folders for f in _folder(root, folder)]
    declared = {(f.folder, f.kind) for f in members if layout.declared.get(f.folder) == f.kind}
    chosen: list[Found] = []
    for f in _folder(root, ""):
        if f.kind == "node" and any(kind == "node" for _, kind in declared):
            continue
        if f.kind == "python" and _weak(f) and any(m.kind == "python" for m in members):
            continue
        chosen.append(f)
    for f in members:
        covered = any(c.kind == f.kind and _encloses(c.folder, f.folder) for c in chosen)
        if f.kind == "go" or (f.folder, f.kind) in declared or not covered:
            chosen.append(f)
    return chosen


def detect_toolchains(root: Path) -> list[ToolchainAdapter]:
    """One adapter per toolchain found; those of subfolders are bound to their folder
    (:class:`FolderAdapter`), so their report paths stay relative to the project root."""
    return [
        f.adapter if not f.folder else FolderAdapter(f.adapter, f.folder)
        for f in find_toolchains(root)
    ]
