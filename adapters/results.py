"""Plain result records shared by the shell and the test-runner adapters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = [
    "CommandResult",
    "TestFailure",
    "TestReport",
    "cap_text",
    "command_report",
    "environment_report",
    "real_paths",
    "report_dict",
]


def cap_text(text: str, limit: int, head: int | None = None) -> str:
    """Shorten ``text`` to about ``limit`` chars, keeping its head and tail (tail-heavy)."""
    if len(text) <= limit:
        return text
    keep_head = limit // 4 if head is None else min(head, limit)
    keep_tail = limit - keep_head
    omitted = len(text) - keep_head - keep_tail
    tail = text[len(text) - keep_tail :] if keep_tail else ""
    return f"{text[:keep_head]}\n[... {omitted} chars omitted ...]\n{tail}"


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one subprocess run."""

    argv: tuple[str, ...]
    exit_code: int | None
    output: str
    timed_out: bool
    truncated: bool
    omitted_bytes: int
    duration: float


@dataclass(frozen=True)
class TestFailure:
    """One failed or errored test, located in the directory the tests ran in."""

    __test__ = False  # not a pytest test class

    test_id: str
    file: str | None
    line: int | None
    message: str
    output: str


@dataclass(frozen=True)
class TestReport:
    """Outcome of one test-runner invocation."""

    __test__ = False  # not a pytest test class

    runner: str
    command: tuple[str, ...]
    passed: int
    failed: int
    errors: int
    skipped: int
    duration: float
    failures: tuple[TestFailure, ...]
    exit_code: int | None
    timed_out: bool
    output: str
    hint: str | None = None  # an actionable next step when the environment is at fault
    folder: str = ""  # the package folder it ran in ("" for the project root)
    parts: tuple[TestReport, ...] = ()  # the reports merged into this one (a monorepo's packages)
    # packages (folders) whose results the runner replayed from its cache (go test's
    # ``(cached)``): their tests were not re-run
    cached: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the run finished cleanly and at least one test passed."""
        return (
            self.exit_code == 0
            and self.failed == 0
            and self.errors == 0
            and not self.timed_out
            and self.passed > 0
        )

    def summary(self, with_hint: bool = True) -> str:
        """One line such as ``3 passed, 1 failed, 0 errors, 0 skipped in 0.41s``, then the hint
        (unless ``with_hint`` is false: a caller that shows the hint elsewhere)."""
        text = (
            f"{self.passed} passed, {self.failed} failed, {self.errors} errors, "
            f"{self.skipped} skipped in {self.duration:.2f}s"
        )
        total = self.passed + self.failed + self.errors + self.skipped
        if not self.timed_out and (self.exit_code == 5 or total == 0):
            text += " (no tests collected)"
        if self.timed_out:
            text += " (timed out)"
        if self.cached:
            names = ", ".join(self.cached[:5]) + (", ..." if len(self.cached) > 5 else "")
            text += f" (cached: {names}; results replayed from the test cache, not re-run)"
        if self.hint and with_hint:
            text += f"; hint: {self.hint}"
        return text


def environment_report(runner: str, hint: str, command: tuple[str, ...] = ()) -> TestReport:
    """A report for a run that could not start because the environment is incomplete."""
    failure = TestFailure(runner, None, None, hint, "")
    return TestReport(
        runner=runner,
        command=command,
        passed=0,
        failed=0,
        errors=1,
        skipped=0,
        duration=0.0,
        failures=(failure,),
        exit_code=None,
        timed_out=False,
        output=hint,
        hint=hint,
    )


CONSOLE_LIMIT = 20_000


def command_report(
    runner: str,
    result: CommandResult,
    counts: Mapping[str, int],
    failures: Sequence[TestFailure],
) -> TestReport:
    """A report from a finished command, its counts and its failures (console output capped)."""
    return TestReport(
        runner=runner,
        command=result.argv,
        duration=result.duration,
        failures=tuple(failures),
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        output=cap_text(result.output, CONSOLE_LIMIT),
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        skipped=counts["skipped"],
    )


def real_paths(report: TestReport, run_root: Path, project_root: Path) -> TestReport:
    """``report`` with every mention of ``run_root`` (the shadow copy the tests ran in) turned
    into ``project_root``: the user and the model read and edit the project's own files."""
    if run_root == project_root:
        return report
    pairs = [(str(run_root), str(project_root))]
    resolved = run_root.resolve()
    if resolved != run_root:
        pairs.append((str(resolved), str(project_root)))

    def fix(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    def fix_report(part: TestReport) -> TestReport:
        failures = tuple(
            replace(
                f,
                file=fix(f.file) if f.file else f.file,
                message=fix(f.message),
                output=fix(f.output),
            )
            for f in part.failures
        )
        return replace(
            part,
            command=tuple(fix(word) for word in part.command),
            failures=failures,
            output=fix(part.output),
            hint=fix(part.hint) if part.hint else part.hint,
            parts=tuple(fix_report(p) for p in part.parts),
        )

    return fix_report(report)


def _totals(report: TestReport) -> dict[str, int]:
    counts = {
        "passed": report.passed,
        "failed": report.failed,
        "errors": report.errors,
        "skipped": report.skipped,
    }
    return counts | {"total": sum(counts.values())}


def _part_dict(report: TestReport) -> dict[str, object]:
    return {
        "ok": report.ok,
        "runner": report.runner,
        "folder": report.folder,
        "command": list(report.command),
        "exit_code": report.exit_code,
        "timed_out": report.timed_out,
        "duration": round(report.duration, 3),
        "totals": _totals(report),
        "hint": report.hint,
        "tests": [
            {
                "id": f.test_id,
                "status": "failed",
                "path": f.file,
                "line": f.line,
                "message": f.message,
            }
            for f in report.failures
        ],
    }


def report_dict(report: TestReport) -> dict[str, object]:
    """The report as plain JSON values: totals, the failing tests (id, status, path relative
    to the project root, 1-based line, message), the command, the duration, and for a merged
    run (several toolchains or packages) one such part per run under ``packages``."""
    parts = report.parts or ((report,) if report.folder else ())
    return _part_dict(report) | {"packages": [_part_dict(p) for p in parts]}
