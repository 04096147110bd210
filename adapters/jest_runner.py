"""Run jest through its programmatic API (``runCLI``) with agent-lsp's own reporter."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from adapters.jsrun import run_js_tests
from adapters.jsscript import invokes, runner_args, script_run
from adapters.node import (
    NodeProject,
    name_pattern,
    node_env,
    node_project,
    read_json,
    split_targets,
    wrapper_run,
)
from adapters.results import TestReport
from adapters.shell import Shell, scratch_dir

__all__ = ["JestRunner", "jest_script"]


def jest_script(name: str) -> str:
    """The text of a script shipped with the adapters (``jest_run.cjs``, ``jest_reporter.cjs``)."""
    return resources.files("adapters").joinpath(name).read_text(encoding="utf-8")


_CAPTURE_TIMEOUT = 120.0


@dataclass(frozen=True)
class WrapperOptions:
    """What a wrapper script (``kcd-scripts test``) passed to jest's ``run``: its options (its
    own ``--config``), the variables it set, and the jest it loaded."""

    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict[str, str])
    jest: str | None = None


async def wrapper_options(
    project: NodeProject,
    run_root: Path,
    script: str,
    *,
    shell: Shell,
    timeout: float,  # noqa: ASYNC109
) -> WrapperOptions | None:
    """Run the wrapper ``script`` runs with ``jest_capture.cjs`` preloaded: it stops at jest's
    ``run`` and writes what the wrapper gave it. None when the script runs jest itself, is no
    wrapper, or the wrapper never called jest (then jest runs on its own)."""
    if not script or invokes(script, "jest"):
        return None
    wrapper = wrapper_run(run_root, script) or wrapper_run(project.folder, script)
    if wrapper is None:
        return None
    tmpdir = scratch_dir(shell, "agent-lsp-jest-wrapper-")
    try:
        out = tmpdir / "captured.json"
        hook = tmpdir / "jest_capture.cjs"
        text = jest_script("jest_capture.cjs")
        target = "const target = null;"
        assert target in text
        hook.write_text(
            text.replace(target, f"const target = {json.dumps(str(out))};", 1), encoding="utf-8"
        )
        env = node_env() | wrapper.env
        options = (project.node_options(), f"--require {json.dumps(str(hook))}")
        env["NODE_OPTIONS"] = " ".join(filter(None, options))
        await shell.run(
            (str(wrapper.bin), *wrapper.args),
            cwd=run_root,
            timeout=min(timeout, _CAPTURE_TIMEOUT),
            env=env,
        )
        data = read_json(out)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    if data is None or not isinstance(data.get("args"), list):
        return None
    captured = data.get("env")
    changed = {str(k): str(v) for k, v in (captured.items() if isinstance(captured, dict) else ())}
    jest = data.get("jest")
    return WrapperOptions(
        runner_args([str(a) for a in data["args"]], "jest"),
        changed,
        jest if isinstance(jest, str) else None,
    )


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
        """Run jest in ``run_root`` (all CPUs for a full run unless the project chose); behind
        a wrapper script, with the options and variables the wrapper gives jest."""
        found = node_project(run_root) or node_project(project_root)
        wrapped = None
        if found is not None and found.setup_hint(self.name, run_root) is None:
            wrapped = await wrapper_options(
                found, run_root, self.script or found.test_script, shell=shell, timeout=timeout
            )

        def build(project: NodeProject, tmpdir: Path) -> tuple[Sequence[str], Path]:
            report_file = tmpdir / "jest.jsonl"
            spec = tmpdir / "spec.json"
            script = tmpdir / "jest_run.cjs"
            reporter = tmpdir / "jest_reporter.cjs"
            script.write_text(jest_script("jest_run.cjs"), encoding="utf-8")
            reporter.write_text(jest_script("jest_reporter.cjs"), encoding="utf-8")
            data = self._spec(
                project, project_root, run_root, targets, self.extra_args, self.script, wrapped
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
        wrapped: WrapperOptions | None = None,
    ) -> dict[str, object]:
        files, names = split_targets(targets)
        argv: dict[str, object] = {
            "ci": True,
            "watch": False,
            "watchAll": False,
            "watchman": False,
            "testLocationInResults": True,
            # no coverage, as `--coverage` is dropped from the script: a config's
            # `collectCoverage` with a threshold fails every run of some of the tests
            "coverage": False,
        }
        by_path = bool(files) and all((run_root / f).is_file() for f in files)
        if by_path:
            argv["runTestsByPath"] = True
        pattern = name_pattern(names)
        if pattern is not None:
            argv["testNamePattern"] = pattern
        bin_path = project.find_bin("jest", run_root) or project.find_bin("jest")
        if wrapped is not None:
            args = wrapped.args
            paths = [p for p in (wrapped.jest, str(run_root), str(project_root)) if p]
        else:
            args = script_run(script or project.test_script, "jest").args
            paths = [str(run_root), str(project_root)]
        return {
            "bin": str(bin_path),
            "cwd": str(run_root),
            "paths": paths,
            "args": [*args, *extra],
            # set by jest_run.cjs itself: the sandbox passes only the variables it knows
            "env": wrapped.env if wrapped is not None else {},
            "files": files,
            "oneFile": by_path and len(files) == 1,
            "argv": argv,
        }
