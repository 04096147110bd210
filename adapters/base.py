"""The protocol every toolchain adapter implements."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from adapters.results import TestReport
from adapters.shell import Shell

__all__ = ["ToolchainAdapter"]


class ToolchainAdapter(Protocol):
    """Runs a project's tests in a (shadow) directory and reports the outcome.

    ``project_root`` is the user's folder (for its virtualenv, node_modules and settings),
    ``run_root`` the folder the tests run in (usually the shadow copy); ``targets`` are test ids
    or files relative to it (empty: the full suite). Report paths are relative to ``run_root``."""

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
