"""Run a Django project's tests with ``python manage.py test`` and parse unittest's text."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path

from adapters.locate import frame_in, innermost
from adapters.pyenv import child_env, finish_report, python_env
from adapters.results import CommandResult, TestFailure, TestReport, cap_text, command_report
from adapters.shell import Shell
from adapters.unittest_runner import dotted_targets, test_id_from_dotted

__all__ = ["DjangoRunner", "parse_unittest_text"]

_FAILURE_LIMIT = 4000
_RAN = re.compile(r"^Ran (\d+) tests? in ([\d.]+)s", re.MULTILINE)
_RESULT = re.compile(r"^(OK|FAILED)(?: \((.*)\))?\s*$", re.MULTILINE)
_HEADER = re.compile(
    r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\S+) \((?P<where>[^)]*)\)(?P<extra>.*)$"
)
_SEPARATOR = "=" * 70
_DASHES = "-" * 70


def _dotted(name: str, where: str) -> str:
    """Python 3.11+ prints ``test_x (mod.Class.test_x)``; older ones ``test_x (mod.Class)``."""
    if where.endswith("." + name) or where.endswith("._FailedTest"):
        return where if not where.endswith("._FailedTest") else name
    return f"{where}.{name}"


def parse_unittest_text(output: str, run_root: Path) -> tuple[dict[str, int], list[TestFailure]]:
    """Counts from ``Ran N tests`` + ``FAILED (failures=1, ...)`` and each failure block."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures: list[TestFailure] = []
    ran = _RAN.findall(output)
    result = _RESULT.findall(output)
    if ran:
        details: dict[str, int] = {}
        for part in (result[-1][1] if result else "").split(","):
            key, _, value = part.strip().partition("=")
            if value.isdigit():
                details[key] = int(value)
        counts["failed"] = details.get("failures", 0) + details.get("unexpected successes", 0)
        counts["errors"] = details.get("errors", 0)
        counts["skipped"] = details.get("skipped", 0) + details.get("expected failures", 0)
        total = sum(int(n) for n, _ in ran)
        counts["passed"] = max(0, total - sum(counts.values()))
    for chunk in output.split(_SEPARATOR)[1:]:
        lines = chunk.strip("\n").splitlines()
        header = _HEADER.match(lines[0]) if lines else None
        if header is None:
            continue
        body = "\n".join(lines[1:]).split("\n" + _DASHES + "\nRan ")[0]
        body = body.removeprefix(_DASHES).strip("\n")
        test_id, test_file = test_id_from_dotted(_dotted(header["name"], header["where"]), run_root)
        test_id += header["extra"].rstrip()
        where = None
        if header["kind"] == "FAIL" and test_file is not None:
            where = frame_in(body, test_file, run_root)  # the test's line, not a helper's
        where = where or innermost(body, run_root)
        file, line = where if where else (test_file, None)
        message = _exception_text(body) or header["kind"].lower()
        failures.append(TestFailure(test_id, file, line, message, cap_text(body, _FAILURE_LIMIT)))
    return counts, failures


_MESSAGE_LINES = 40
_MESSAGE_CHARS = 3000


def _exception_text(body: str) -> str:
    """The exception after the traceback's last frame (``AssertionError: 4 != 5`` and the
    diff below it), bounded; not just its last line (a diff marker)."""
    lines = body.rstrip().splitlines()
    frames = [i for i, row in enumerate(lines) if row.startswith('  File "')]
    start = frames[-1] + 1 if frames else 0
    while start < len(lines) and lines[start].startswith("    "):
        start += 1  # the frame's source line and its ^^^ markers
    rows = [row.rstrip() for row in lines[start:]]
    while rows and not rows[0].strip():
        rows.pop(0)
    if len(rows) > _MESSAGE_LINES:
        rows = [*rows[:_MESSAGE_LINES], f"[... {len(rows) - _MESSAGE_LINES} more lines]"]
    text = "\n".join(rows).strip()
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + " [...]"


class DjangoRunner:
    """Toolchain adapter for Django projects (``manage.py``) without pytest-django."""

    name: str = "django"
    extra_args: tuple[str, ...] = ()  # the user's `tests.args`

    def __init__(self, python: str | None = None) -> None:
        self._python = python

    def detect(self, root: Path) -> bool:
        return (root / "manage.py").is_file()

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """``python manage.py test --noinput [labels]`` in ``run_root``."""
        env_info = python_env(project_root, self._python)
        test = ("manage.py", "test", "--noinput", *self.extra_args)
        argv = (env_info.python, *test, *dotted_targets(targets))
        result = await shell.run(argv, cwd=run_root, timeout=timeout, env=child_env(run_root))
        report = await asyncio.to_thread(_build_report, result, run_root, timeout)
        return finish_report(report, result, env_info, "django")


def _build_report(result: CommandResult, run_root: Path, timeout: float) -> TestReport:
    counts, failures = parse_unittest_text(result.output, run_root)
    if result.timed_out or (result.exit_code != 0 and not failures):
        counts["errors"] += 1
        if result.timed_out:
            message = f"manage.py test timed out after {timeout:g}s"
        else:
            rows = [row.strip() for row in result.output.splitlines() if row.strip()]
            message = rows[-1] if rows else f"manage.py test exited with code {result.exit_code}"
        where = innermost(result.output, run_root)
        file, line = where if where else (None, None)
        output = cap_text(result.output, _FAILURE_LIMIT)
        failures.append(TestFailure("manage.py test", file, line, message, output))
    return command_report("django", result, counts, failures)
