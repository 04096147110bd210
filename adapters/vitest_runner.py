"""Run vitest once (``--run``) with its JSON reporter and parse the results."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from adapters.jest_runner import jest_script
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
    script: str = ""  # the user's `tests.command`, read instead of the project's scripts.test

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
            options = script_run(self.script or project.test_script, "vitest").args
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
            if _said(run_root, options, "coverage"):  # off, as `--coverage` is dropped
                argv.append("--coverage.enabled=false")
            if os.name != "nt" and _typechecks_with_tsc(run_root, options):
                argv.append(f"--typecheck.checker={_checker(tmpdir)}")
            return argv, report_file

        return await run_js_tests(
            self.name,
            project_root,
            run_root,
            build,
            shell=shell,
            timeout=timeout,
            script=self.script,
        )


_CONFIGS = ("vitest.config", "vite.config", "vitest.workspace", "vitest.projects")
_EXTS = ("ts", "mts", "cts", "js", "mjs", "cjs", "json")


def _said(run_root: Path, options: Sequence[str], word: str) -> bool:
    """Whether the script's options or a vitest/vite config in ``run_root`` say ``word``."""
    texts = [_read(run_root / f"{stem}.{ext}") for stem in _CONFIGS for ext in _EXTS]
    return word in " ".join([*options, *texts])


def _typechecks_with_tsc(run_root: Path, options: Sequence[str]) -> bool:
    """Whether the run may type-check with vitest's default checker (tsc): ``--typecheck``
    in the script or ``typecheck`` in a config, and no other ``checker`` chosen."""
    return _said(run_root, options, "typecheck") and not _said(run_root, options, "checker")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


def _checker(tmpdir: Path) -> Path:
    """``vitest_checker.cjs`` in ``tmpdir``: tsc with its build info kept in ``tmpdir`` (vitest
    puts it in its own dist folder, the user's node_modules, read-only in the sandbox)."""
    script = tmpdir / "tsc-checker.cjs"
    text = jest_script("vitest_checker.cjs").replace(
        "const SCRATCH = null;", f"const SCRATCH = {json.dumps(str(tmpdir))};"
    )
    script.write_text(text, encoding="utf-8")
    script.chmod(0o755)
    return script


def _without_filters(args: Sequence[str]) -> list[str]:
    """The script's options without its file filters (targets replace them): a word that
    follows an option without ``=`` is taken as that option's value."""
    kept: list[str] = []
    for word in args:
        previous = kept[-1] if kept else ""
        if word.startswith("-") or (previous.startswith("-") and "=" not in previous):
            kept.append(word)
    return kept
