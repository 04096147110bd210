"""The run both JavaScript test runners share: find the project, check it can run, run the
command a runner builds in a scratch folder, and read the JSON report it wrote there."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from adapters.jsreport import build_js_report
from adapters.jsscript import script_run
from adapters.node import NodeProject, node_env, node_project
from adapters.results import TestReport, environment_report, real_paths
from adapters.shell import Shell, scratch_dir

# (the project, a scratch folder) -> (argv, where the runner writes its JSON report)
BuildCommand = Callable[[NodeProject, Path], tuple[Sequence[str], Path]]


async def run_js_tests(
    runner: str,
    project_root: Path,
    run_root: Path,
    build: BuildCommand,
    *,
    shell: Shell,
    timeout: float,  # noqa: ASYNC109
    script: str = "",
) -> TestReport:
    """Run `runner` ("jest", "vitest") in `run_root` with the command `build` makes; a missing
    package.json or an install that is not ready is an environment report, not a failure.
    ``script`` (the `tests.command` setting) stands for the project's ``scripts.test``."""
    project = node_project(run_root) or node_project(project_root)
    if project is None:
        return environment_report(runner, f"no package.json in {project_root}")
    hint = project.setup_hint(runner, run_root)
    if hint is not None:
        return real_paths(environment_report(runner, hint), run_root, project_root)
    tmpdir = scratch_dir(shell, f"agent-lsp-{runner}-")
    try:
        argv, report_file = build(project, tmpdir)
        env = node_env()
        env.update(script_run(script or project.test_script, runner).env)
        if options := project.node_options():
            env["NODE_OPTIONS"] = options
        result = await shell.run(argv, cwd=run_root, timeout=timeout, env=env)
        report = await asyncio.to_thread(
            build_js_report, runner, result, report_file, run_root, timeout
        )
        failed_to_run = report.errors > 0 and not report.hint
        hint = project.output_hint(_plain(result.output)) if failed_to_run else None
        report = dataclasses.replace(report, hint=hint) if hint else report
        return real_paths(report, run_root, project_root)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
