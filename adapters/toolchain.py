"""Pick the test runner for a project and describe what was found."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from adapters.pytest_runner import PytestRunner
from adapters.results import TestReport
from adapters.shell import Shell

__all__ = ["ToolchainAdapter", "describe_project", "detect_toolchain"]

_PYTHON_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile")
_LOOKED_FOR = "pyproject.toml, pytest.ini, setup.cfg, tox.ini, conftest.py, test_*.py"


class ToolchainAdapter(Protocol):
    """Runs a project's tests in a (shadow) directory and reports the outcome."""

    name: str

    def detect(self, root: Path) -> bool: ...

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport: ...


def detect_toolchain(root: Path) -> ToolchainAdapter | None:
    """The adapter able to test ``root``, or None."""
    runner = PytestRunner()
    return runner if runner.detect(root) else None


def describe_project(root: Path) -> str:
    """A one-line profile of the project's language, test runner and interpreter."""
    runner = PytestRunner()
    reason = runner.detect_reason(root)
    if reason is None:
        kind = "Python project; " if _is_python(root) else ""
        return f"{kind}no test runner found (looked for {_LOOKED_FOR})"
    return (
        f"Python project; tests: pytest (found {reason}); interpreter: {runner.interpreter(root)}"
    )


def _is_python(root: Path) -> bool:
    if any((root / marker).is_file() for marker in _PYTHON_MARKERS):
        return True
    return next(root.glob("*.py"), None) is not None
