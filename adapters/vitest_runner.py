"""Run vitest once (``--run``) with its JSON reporter and parse the results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from adapters.jsrun import run_js_tests
from adapters.node import NodeProject, name_pattern, node_project, split_targets
from adapters.results import TestReport
from adapters.shell import Shell

__all__ = ["VitestRunner"]


class VitestRunner:
    """Toolchain adapter for vitest, run from node_modules/.bin without watch mode.

    A run where vitest finds no tests is reported as such (no ``--passWithNoTests``); a test
    file without tests is an error of that file, as vitest itself fails the run for it."""

    name: str = "vitest"

    def detect(self, root: Path) -> bool:
        project = node_project(root)
        return project is not None and project.runner == "vitest"

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """Run ``vitest --run`` in ``run_root``; targets are files or ``file::test name``."""

        def build(project: NodeProject, tmpdir: Path) -> tuple[Sequence[str], Path]:
            binary = project.find_bin("vitest", run_root) or project.find_bin("vitest")
            report_file = tmpdir / "vitest.json"
            files, names = split_targets(targets)
            argv = [
                str(binary),
                "--run",
                "--reporter=default",
                "--reporter=json",
                f"--outputFile.json={report_file}",
                *files,
            ]
            pattern = name_pattern(names)
            if pattern is not None:
                argv += ["--testNamePattern", pattern]
            return argv, report_file

        return await run_js_tests(
            self.name, project_root, run_root, build, shell=shell, timeout=timeout
        )
