"""Run unittest-style tests without pytest (``python -m unittest`` semantics), JSON results."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from adapters import unittest_main
from adapters.locate import frame_in, innermost, project_path
from adapters.pyenv import child_env, finish_report, python_env
from adapters.results import CommandResult, TestFailure, TestReport, cap_text, command_report
from adapters.shell import Shell, scratch_dir
from adapters.unittest_config import discovery_root

__all__ = ["UnittestRunner", "dotted_targets", "test_id_from_dotted"]

_FAILURE_LIMIT = 4000
_FAILED_LOAD = "unittest.loader._FailedTest."
_SKIP_DIRS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", "build"})


def test_id_from_dotted(dotted: str, run_root: Path) -> tuple[str, str | None]:
    """(``file::Class::method``, file) for a unittest id such as ``pkg.test_x.Class.method``;
    the dotted id itself when no file of the project matches."""
    name, space, extra = dotted.partition(" ")
    name = name.removeprefix(_FAILED_LOAD)
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        for rel in ("/".join(parts[:i]) + ".py", "/".join(parts[:i]) + "/__init__.py"):
            if (run_root / rel).is_file():
                test_id = "::".join([rel, *parts[i:]])
                return test_id + (space + extra if extra else ""), rel
    return dotted.removeprefix(_FAILED_LOAD), None


def dotted_targets(targets: Sequence[str]) -> list[str]:
    """``tests/test_x.py::Class::method`` (or a folder, or a dotted name) -> dotted names."""
    names: list[str] = []
    for target in targets:
        path, _, rest = target.partition("::")
        if path.endswith(".py") or "/" in path or os.sep in path:
            module = re.sub(r"(/__init__)?\.py$", "", path.replace(os.sep, "/")).strip("/")
            path = module.replace("/", ".")
        names.append(".".join([path, *rest.split("::")]) if rest else path)
    return names


_TESTCASE = re.compile(r"^class\s+\w+\s*\([^)]*\bTestCase\b", re.MULTILINE)
_PYTEST_STYLE = re.compile(r"^(?:async\s+)?def\s+test\w*\s*\(|^\s*import pytest\b", re.MULTILINE)


def scan_python_tests(root: Path) -> tuple[str | None, str | None]:
    """(a test file with a unittest ``TestCase`` class, a test file in pytest style: module
    level ``def test_*`` or ``import pytest``), each None if absent. Bounded scan of the
    folders ``python -m unittest`` discovers: packages, plus ``tests/`` and ``test/``."""
    unittest_file: str | None = None
    pytest_file: str | None = None
    seen = 0
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [
            d
            for d in dirs
            if d not in _SKIP_DIRS
            and not d.startswith(".")
            and (d in ("tests", "test") or (here / d / "__init__.py").is_file())
        ]
        for name in sorted(files):
            if not (name.startswith("test") and name.endswith(".py")):
                continue
            seen += 1
            try:
                text = (here / name).read_text(encoding="utf-8", errors="replace")[:50_000]
            except OSError:
                continue
            rel = (here / name).relative_to(root).as_posix()
            if unittest_file is None and _TESTCASE.search(text):
                unittest_file = rel
            if pytest_file is None and _PYTEST_STYLE.search(text):
                pytest_file = rel
            if pytest_file or seen > 200:
                return unittest_file, pytest_file
    return unittest_file, pytest_file


def has_unittest_tests(root: Path) -> str | None:
    """A unittest-only suite's test file, or None when there is none or pytest-style tests."""
    unittest_file, pytest_file = scan_python_tests(root)
    return unittest_file if pytest_file is None else None


class UnittestRunner:
    """Toolchain adapter for unittest suites, run with the project's interpreter."""

    name: str = "unittest"

    def __init__(self, python: str | None = None) -> None:
        self._python = python

    def detect(self, root: Path) -> bool:
        return has_unittest_tests(root) is not None

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """Discover (or load ``targets``) and run with a recording result class."""
        env_info = python_env(project_root, self._python)
        tmpdir = scratch_dir(shell, "agent-lsp-unittest-")
        out = tmpdir / "results.json"
        script = unittest_main.__file__
        declared = discovery_root(run_root) or discovery_root(project_root)
        options = declared.argv() if declared is not None else []
        argv = (env_info.python, script, str(out), *options, *_path_targets(targets))
        try:
            result = await shell.run(argv, cwd=run_root, timeout=timeout, env=child_env(run_root))
            report = await asyncio.to_thread(_build_report, result, out, run_root, timeout)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        return finish_report(report, result, env_info, "unittest")


def _path_targets(targets: Sequence[str]) -> list[str]:
    """Folders and files stay paths (``unittest_main`` discovers under them), ``file::Class``
    too; anything else becomes a dotted name."""
    return [
        t.replace(os.sep, "/") if "/" in t or os.sep in t or ".py" in t else dotted_targets([t])[0]
        for t in targets
    ]


def _records(out: Path) -> list[dict[str, Any]] | None:
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, list):
        return None
    items = cast("list[object]", tests)
    return [cast("dict[str, Any]", t) for t in items if isinstance(t, dict)]


def _test_id(record: dict[str, Any], run_root: Path) -> tuple[str, str | None]:
    """``file::Class::method`` (plus a subtest's ``(n=2)``) from the module's file, else from
    the dotted id."""
    dotted = str(record.get("id", ""))
    module_file = record.get("module_file")
    rel = project_path(str(module_file), run_root) if module_file else None
    name = str(record.get("name") or "")
    if rel is None or not name:
        return test_id_from_dotted(dotted, run_root)
    extra = dotted.partition(" ")[2]
    test_id = "::".join([rel, *name.split(".")])
    return test_id + (" " + extra if extra else ""), rel


def _failure(record: dict[str, Any], run_root: Path) -> TestFailure:
    text = str(record.get("traceback") or "")
    test_id, test_file = _test_id(record, run_root)
    own = project_path(str(record.get("file") or ""), run_root) if record.get("file") else None
    test_line = record.get("test_line")
    where = None
    if record.get("assertion") and own is not None:
        # an assertion fails the test where the test asserts, not inside a shared helper
        where = (own, test_line) if isinstance(test_line, int) else frame_in(text, own, run_root)
    where = where or innermost(text, run_root)
    if where is None:
        line = record.get("line")
        where = (own, line if isinstance(line, int) else None) if own else (test_file, None)
    message = str(record.get("message") or "test failed")
    return TestFailure(test_id, where[0], where[1], message, cap_text(text, _FAILURE_LIMIT))


def _build_report(result: CommandResult, out: Path, run_root: Path, timeout: float) -> TestReport:
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures: list[TestFailure] = []
    key = {"passed": "passed", "failed": "failed", "error": "errors", "skipped": "skipped"}
    records = _records(out)
    for record in records or []:
        outcome = key.get(str(record.get("outcome")), "errors")
        counts[outcome] += 1
        if outcome in ("failed", "errors"):
            failures.append(_failure(record, run_root))
    if records is None or (result.exit_code not in (0, 1, 5) and not failures):
        counts["errors"] += 1
        where = innermost(result.output, run_root)
        if result.timed_out:
            message = f"unittest timed out after {timeout:g}s"
        else:
            rows = [row.strip() for row in result.output.splitlines() if row.strip()]
            message = rows[-1] if rows else f"exited with code {result.exit_code}"
        file, line = where if where else (None, None)
        failures.append(
            TestFailure("unittest", file, line, message, cap_text(result.output, _FAILURE_LIMIT))
        )
    return command_report("unittest", result, counts, failures)
