"""Run jest through its programmatic API (``runCLI``) with agent-lsp's own reporter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from adapters.jsrun import run_js_tests
from adapters.jsscript import script_run
from adapters.node import NodeProject, name_pattern, node_project, split_targets
from adapters.results import TestReport
from adapters.shell import Shell

__all__ = ["JestRunner", "jest_script"]


def jest_script(name: str) -> str:
    """The text of a script shipped with the adapters (``jest_run.cjs``, ``jest_reporter.cjs``)."""
    return resources.files("adapters").joinpath(name).read_text(encoding="utf-8")


class JestRunner:
    """Toolchain adapter for jest (any package manager; run from node_modules directly).

    ``jest_run.cjs`` calls ``runCLI`` after resetting ``process.argv`` (tests that parse argv
    would otherwise see our flags), with the options of the project's ``scripts.test`` parsed
    by jest's own CLI parser; ``jest_reporter.cjs`` writes one JSON line per finished file."""

    name: str = "jest"
    extra_args: tuple[str, ...] = ()  # the user's `tests.args`
    script: str = ""  # the user's `tests.command`, read instead of the project's scripts.test

    def detect(self, root: Path) -> bool:
        project = node_project(root)
        return project is not None and project.runner == "jest"

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """Run jest in ``run_root`` (all CPUs for a full run unless the project chose)."""

        def build(project: NodeProject, tmpdir: Path) -> tuple[Sequence[str], Path]:
            report_file = tmpdir / "jest.jsonl"
            spec = tmpdir / "spec.json"
            script = tmpdir / "jest_run.cjs"
            reporter = tmpdir / "jest_reporter.cjs"
            script.write_text(jest_script("jest_run.cjs"), encoding="utf-8")
            reporter.write_text(jest_script("jest_reporter.cjs"), encoding="utf-8")
            data = self._spec(
                project, project_root, run_root, targets, self.extra_args, self.script
            )
            data.update(reporter=str(reporter), outputFile=str(report_file))
            spec.write_text(json.dumps(data), encoding="utf-8")
            return ("node", str(script), str(spec)), report_file

        return await run_js_tests(
            self.name,
            project_root,
            run_root,
            build,
            shell=shell,
            timeout=timeout,
            script=self.script,
        )

    @staticmethod
    def _spec(
        project: NodeProject,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        extra: Sequence[str] = (),
        script: str = "",
    ) -> dict[str, object]:
        files, names = split_targets(targets)
        argv: dict[str, object] = {
            "ci": True,
            "watch": False,
            "watchAll": False,
            "watchman": False,
            "testLocationInResults": True,
        }
        by_path = bool(files) and all((run_root / f).is_file() for f in files)
        if by_path:
            argv["runTestsByPath"] = True
        pattern = name_pattern(names)
        if pattern is not None:
            argv["testNamePattern"] = pattern
        bin_path = project.find_bin("jest", run_root) or project.find_bin("jest")
        return {
            "bin": str(bin_path),
            "cwd": str(run_root),
            "paths": [str(run_root), str(project_root)],
            "args": [*script_run(script or project.test_script, "jest").args, *extra],
            "files": files,
            "oneFile": by_path and len(files) == 1,
            "argv": argv,
        }
