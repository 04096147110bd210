"""Run vitest once (``--run``) with its JSON reporter and parse the results."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from adapters.jsreport import build_js_report
from adapters.node import name_pattern, node_env, node_project, split_targets
from adapters.results import TestReport, environment_report
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
        project = node_project(run_root) or node_project(project_root)
        if project is None:
            return environment_report(self.name, f"no package.json in {project_root}")
        hint = project.setup_hint("vitest", run_root)
        if hint is not None:
            return environment_report(self.name, hint)
        binary = project.find_bin("vitest", run_root) or project.find_bin("vitest")
        tmpdir = Path(tempfile.mkdtemp(prefix="agent-lsp-vitest-"))
        try:
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
            env = node_env()
            if options := project.node_options():
                env["NODE_OPTIONS"] = options
            result = await shell.run(argv, cwd=run_root, timeout=timeout, env=env)
            return await asyncio.to_thread(
                build_js_report, self.name, result, report_file, run_root, timeout
            )
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
