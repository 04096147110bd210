"""Run jest through its programmatic API (``runCLI``) and parse its JSON results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from adapters.jsrun import run_js_tests
from adapters.node import NodeProject, name_pattern, node_project, split_targets
from adapters.results import TestReport
from adapters.shell import Shell

__all__ = ["JEST_RUNNER_SCRIPT", "JestRunner"]

# jest runs tests in its own process when it thinks one worker is enough (always for a single
# file), so tests that read ``process.argv`` would see ``--json --outputFile=...`` and may exit
# the whole run. This script calls ``runCLI`` after resetting argv to a bare ``jest``.
JEST_RUNNER_SCRIPT = r"""'use strict';
const fs = require('fs');
const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
process.argv = [process.argv[0], spec.bin];
let jest;
try {
  jest = require(require.resolve('jest', { paths: spec.paths }));
} catch (err) {
  console.error('agent-lsp: cannot load jest from ' + spec.paths.join(', ') + ': ' + err.message);
  process.exit(3);
}
const runCLI = jest.runCLI || (jest.default && jest.default.runCLI);
if (typeof runCLI !== 'function') {
  console.error('agent-lsp: this jest has no runCLI');
  process.exit(3);
}
runCLI(Object.assign({ _: [], $0: 'jest' }, spec.argv), [spec.cwd]).then(
  ({ results }) => {
    process.exitCode = results && results.success ? 0 : 1;
    // Like --forceExit, but only after a grace period: open handles must not hang the agent.
    setTimeout(() => process.exit(process.exitCode), 1500).unref();
  },
  (err) => {
    console.error((err && err.stack) || String(err));
    process.exit(2);
  },
);
"""


class JestRunner:
    """Toolchain adapter for jest (any package manager; run from node_modules directly)."""

    name: str = "jest"

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
        """Run jest in ``run_root`` (in band for one file, in workers otherwise)."""

        def build(project: NodeProject, tmpdir: Path) -> tuple[Sequence[str], Path]:
            report_file = tmpdir / "jest.json"
            spec = tmpdir / "spec.json"
            script = tmpdir / "run-jest.cjs"
            script.write_text(JEST_RUNNER_SCRIPT, encoding="utf-8")
            spec.write_text(
                json.dumps(self._spec(project, project_root, run_root, targets, report_file)),
                encoding="utf-8",
            )
            return ("node", str(script), str(spec)), report_file

        return await run_js_tests(
            self.name, project_root, run_root, build, shell=shell, timeout=timeout
        )

    @staticmethod
    def _spec(
        project: NodeProject,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        report_file: Path,
    ) -> dict[str, object]:
        files, names = split_targets(targets)
        argv: dict[str, object] = {
            "json": True,
            "outputFile": str(report_file),
            "ci": True,
            "watch": False,
            "watchAll": False,
            "watchman": False,
            "testLocationInResults": True,
            "_": files,
        }
        if files and all((run_root / f).is_file() for f in files):
            argv["runTestsByPath"] = True
        pattern = name_pattern(names)
        if pattern is not None:
            argv["testNamePattern"] = pattern
        if config := _config_flag(project.test_script):
            argv["config"] = config
        bin_path = project.find_bin("jest", run_root) or project.find_bin("jest")
        return {
            "bin": str(bin_path),
            "cwd": str(run_root),
            "paths": [str(run_root), str(project_root)],
            "argv": argv,
        }


def _config_flag(script: str) -> str | None:
    words = script.split()
    for index, word in enumerate(words):
        if word.startswith("--config="):
            return word.split("=", 1)[1]
        if word in ("--config", "-c") and index + 1 < len(words):
            return words[index + 1]
    return None
