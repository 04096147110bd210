"""Run vitest once (``--run``) with its JSON reporter and parse the results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from adapters.jsrun import run_js_tests
from adapters.jsscript import script_run
from adapters.node import NodeProject, name_pattern, node_project, split_targets
from adapters.results import TestReport
from adapters.shell import Shell

__all__ = ["VitestRunner"]


class VitestRunner:
    """Toolchain adapter for vitest, run from node_modules/.bin without watch mode.

    The options of the project's ``scripts.test`` are kept (``--typecheck``, ``--config``,
    ``--project``, ``--passWithNoTests``...), so the totals are the project's own; without
    ``--passWithNoTests`` a test file without tests is an error of that file, as vitest itself
    fails the run for it."""

    name: str = "vitest"
    extra_args: tuple[str, ...] = ()  # the user's `tests.args`

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
        """Run ``vitest run`` in ``run_root``; targets are files or ``file::test name``."""

        def build(project: NodeProject, tmpdir: Path) -> tuple[Sequence[str], Path]:
            binary = project.find_bin("vitest", run_root) or project.find_bin("vitest")
            report_file = tmpdir / "vitest.json"
            files, names = split_targets(targets)
            options = script_run(project.test_script, "vitest").args
            argv = [
                str(binary),
                "run",
                *(_without_filters(options) if files else options),
                "--reporter=default",
                "--reporter=json",
                f"--outputFile.json={report_file}",
                *self.extra_args,
                *files,
            ]
            pattern = name_pattern(names)
            if pattern is not None:
                argv += ["--testNamePattern", pattern]
            return argv, report_file

        return await run_js_tests(
            self.name, project_root, run_root, build, shell=shell, timeout=timeout
        )


def _without_filters(args: Sequence[str]) -> list[str]:
    """The script's options without its file filters (targets replace them): a word that
    follows an option without ``=`` is taken as that option's value."""
    kept: list[str] = []
    for word in args:
        previous = kept[-1] if kept else ""
        if word.startswith("-") or (previous.startswith("-") and "=" not in previous):
            kept.append(word)
    return kept
