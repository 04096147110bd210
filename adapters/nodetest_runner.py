"""Node's own test runner (``node --test``, ``node:test``): run with the project's flags and
test paths from ``scripts.test``, read through a reporter of ours (``nodetest_reporter.cjs``)
that writes the JSON lines the jest report reader takes."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from adapters.jest_runner import jest_script
from adapters.jsreport import build_js_report
from adapters.node import node_env, node_project, split_targets
from adapters.results import TestReport, environment_report, real_paths
from adapters.shell import Shell, scratch_dir

__all__ = ["NodeTestRunner", "node_test_args"]

_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
# Node options that take the next word as their value (when not written `--name=value`).
_VALUED = frozenset(
    {
        "--import",
        "--require",
        "-r",
        "--loader",
        "--experimental-loader",
        "--conditions",
        "-C",
        "--env-file",
        "--test-name-pattern",
        "--test-skip-pattern",
        "--test-concurrency",
        "--test-timeout",
        "--test-reporter",
        "--test-reporter-destination",
        "--test-shard",
        "--input-type",
    }
)
# What the adapter sets itself, or what would make the run interactive or change files.
_DROPPED = frozenset(
    {
        "--watch",
        "--test-reporter",
        "--test-reporter-destination",
        "--experimental-test-coverage",
        "--test-update-snapshots",
        "--test-only",
    }
)


def node_test_args(script: str) -> tuple[list[str], list[str]]:
    """The Node options and the test paths of the ``node … --test …`` command in ``script``
    (without ``--test`` itself and without the options the adapter sets)."""
    try:
        words = shlex.split(script)
    except ValueError:
        words = script.split()
    command: list[str] = []
    for word in words:
        if word in _SEPARATORS:
            if "--test" in command:
                break
            command = []
            continue
        command.append(word)
    if "node" not in [Path(w).name.removesuffix(".exe") for w in command]:
        return [], []
    start = next(i for i, w in enumerate(command) if Path(w).name.removesuffix(".exe") == "node")
    flags: list[str] = []
    paths: list[str] = []
    rest = iter(command[start + 1 :])
    for word in rest:
        name = word.split("=", 1)[0]
        takes = name in _VALUED and "=" not in word
        value = next(rest, "") if takes else None
        if word == "--test" or name in _DROPPED:
            continue
        if word.startswith("-"):
            flags += [word] if value is None else [word, value]
        else:
            paths.append(word)
    return flags, paths


def _expanded(paths: Sequence[str], run_root: Path) -> list[str]:
    """The script's test paths as its shell would give them to node (globs expanded)."""
    out: list[str] = []
    for path in paths:
        if any(c in path for c in "*?["):
            try:
                found = sorted(p.relative_to(run_root).as_posix() for p in run_root.glob(path))
            except (ValueError, NotImplementedError):  # an absolute pattern: node's to read
                found = []
            out += found or [path]
        else:
            out.append(path)
    return out


def _own_names(names: Sequence[str]) -> str | None:
    """The pattern for a targeted run: Node matches a test by its own name, not its suites'
    (`math adds` is the test `adds` of the suite `math`), so each full name's tails match."""
    if not names:
        return None
    tails: list[str] = []
    for name in names:
        words = name.split(" ")
        tails += [" ".join(words[i:]) for i in range(len(words))]
    return "^(?:" + "|".join(re.escape(t) for t in dict.fromkeys(tails)) + ")$"


class NodeTestRunner:
    """Toolchain adapter for ``node --test``: no package to install, Node 20+."""

    name: str = "node-test"
    extra_args: tuple[str, ...] = ()  # the user's `tests.args`
    script: str = ""  # the user's `tests.command`, read instead of the project's scripts.test

    def detect(self, root: Path) -> bool:
        project = node_project(root)
        return project is not None and project.runner == "node-test"

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """Run ``node --test`` in ``run_root``; targets are files or ``file::test name``."""
        project = node_project(run_root) or node_project(project_root)
        if project is None:
            return environment_report(self.name, f"no package.json in {project_root}")
        if shutil.which("node") is None:
            hint = "node is not on PATH: install Node.js 20+ (e.g. `apt-get install nodejs`)"
            return environment_report(self.name, hint)
        tmpdir = scratch_dir(shell, "agent-lsp-node-test-")
        try:
            files, names = split_targets(targets)
            pattern = _own_names(names)
            reporter = tmpdir / "reporter.cjs"
            text = jest_script("nodetest_reporter.cjs").replace(
                "const PATTERN_SOURCE = null;", f"const PATTERN_SOURCE = {json.dumps(pattern)};"
            )
            reporter.write_text(text, encoding="utf-8")
            report_file = tmpdir / "node-test.jsonl"
            flags, paths = node_test_args(self.script or project.test_script)
            argv = [
                "node",
                *flags,
                "--test",
                "--test-reporter=spec",
                "--test-reporter-destination=stdout",
                f"--test-reporter={reporter}",
                f"--test-reporter-destination={report_file}",
                *self.extra_args,
                *([f"--test-name-pattern={pattern}"] if pattern else []),
                *(files or _expanded(paths, run_root)),
            ]
            result = await shell.run(argv, cwd=run_root, timeout=timeout, env=node_env())
            report = await asyncio.to_thread(
                build_js_report, self.name, result, report_file, run_root, timeout
            )
            return real_paths(report, run_root, project_root)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
