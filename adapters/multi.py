"""Adapters bound to a subfolder, and a composite that runs several and merges the reports."""

from __future__ import annotations

import dataclasses
import posixpath
import time
from collections.abc import Sequence
from pathlib import Path

from adapters.base import ToolchainAdapter
from adapters.results import TestFailure, TestReport, cap_text
from adapters.shell import Shell

__all__ = ["CompositeAdapter", "FolderAdapter", "merge_reports"]

_CONSOLE_LIMIT = 20_000


def _strip(target: str, folder: str) -> str | None:
    """``target`` relative to ``folder`` if it lies inside it, else None."""
    location, sep, rest = target.partition("::")
    location = location.removeprefix("./").rstrip("/")
    if location != folder and not location.startswith(folder + "/"):
        return None
    inner = location[len(folder) + 1 :] or "."
    return inner + sep + rest


def _rebase_id(test_id: str, folder: str, base: Path) -> str:
    location, sep, rest = test_id.partition("::")
    if not sep and not (base / location).exists():
        return test_id  # a runner name or a dotted id: not a path
    return posixpath.normpath(posixpath.join(folder, location)) + sep + rest


class FolderAdapter:
    """Runs ``inner`` in the subfolder ``folder`` of the project; targets and report paths are
    relative to the project root, like those of any other adapter."""

    def __init__(self, inner: ToolchainAdapter, folder: str) -> None:
        self.inner = inner
        self.folder = folder.strip("/")
        self.name = f"{inner.name} ({self.folder}/)"

    def detect(self, root: Path) -> bool:
        return self.inner.detect(root / self.folder)

    def owns(self, target: str) -> bool:
        return _strip(target, self.folder) is not None

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """Run the inner adapter on the targets inside the folder (all tests when none given)."""
        inner_targets = [t for t in (_strip(x, self.folder) for x in targets) if t is not None]
        if "." in inner_targets:  # the folder itself: all its tests
            inner_targets = []
        sub_run = run_root / self.folder
        report = await self.inner.run(
            project_root / self.folder, sub_run, inner_targets, shell=shell, timeout=timeout
        )
        failures = tuple(
            dataclasses.replace(
                f,
                test_id=_rebase_id(f.test_id, self.folder, sub_run),
                file=posixpath.join(self.folder, f.file)
                if f.file and "://" not in f.file and not Path(f.file).is_absolute()
                else f.file,
            )
            for f in report.failures
        )
        return dataclasses.replace(report, runner=self.name, failures=failures, folder=self.folder)


class CompositeAdapter:
    """Runs each adapter in turn (sharing one time budget) and merges their reports.

    With targets, an adapter bound to a folder runs only the targets of which its folder is
    the nearest owner, and an adapter of the project root only the targets no folder adapter
    owns; adapters left without targets are not run."""

    def __init__(self, adapters: Sequence[ToolchainAdapter]) -> None:
        self.adapters = tuple(adapters)
        self.name = " + ".join(a.name for a in self.adapters)

    def detect(self, root: Path) -> bool:
        return any(a.detect(root) for a in self.adapters)

    def plan(self, targets: Sequence[str]) -> list[tuple[ToolchainAdapter, list[str]]]:
        """Which adapter runs which targets: each target goes to the adapters of the nearest
        folder that owns it (a package nested in another is its own owner), else to those of
        the project root."""
        if not targets:
            return [(a, []) for a in self.adapters]
        folders = [a for a in self.adapters if isinstance(a, FolderAdapter)]
        chosen: dict[int, list[str]] = {}
        for target in targets:
            owners = [f for f in folders if f.owns(target)]
            if owners:
                depth = max(len(f.folder) for f in owners)
                runners: list[ToolchainAdapter] = [f for f in owners if len(f.folder) == depth]
            else:
                runners = [a for a in self.adapters if not isinstance(a, FolderAdapter)]
            for adapter in runners:
                chosen.setdefault(id(adapter), []).append(target)
        return [(a, chosen[id(a)]) for a in self.adapters if id(a) in chosen]

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        deadline = time.monotonic() + timeout
        reports: list[TestReport] = []
        for adapter, mine in self.plan(targets):
            remaining = max(1.0, deadline - time.monotonic())
            reports.append(
                await adapter.run(project_root, run_root, mine, shell=shell, timeout=remaining)
            )
        return merge_reports(reports)


def _empty(report: TestReport) -> bool:
    total = report.passed + report.failed + report.errors + report.skipped
    return total == 0 and not report.failures and not report.timed_out


def merge_reports(reports: Sequence[TestReport]) -> TestReport:
    """One report: counts and failures added up, the first failing exit code, all outputs.

    A report that found no tests at all (and no failure) does not decide the exit code while
    another report ran tests."""
    if len(reports) == 1:
        return reports[0]
    if not reports:
        message = "no tests to run: no adapter owns the targets"
        return TestReport("none", (), 0, 0, 0, 0, 0.0, (), 5, False, message)
    command: list[str] = []
    for report in reports:
        command += [*(["&&"] if command else []), *report.command]
    # A toolchain that found nothing to run does not fail the others' results.
    counted = [r for r in reports if not _empty(r)] or list(reports)
    codes = [r.exit_code for r in counted]
    nonzero = [c for c in codes if c not in (0, None)]
    exit_code = nonzero[0] if nonzero else (None if None in codes else 0)
    output = "\n".join(f"== {r.runner}: {r.summary()} ==\n{r.output}" for r in reports)
    failures: list[TestFailure] = [f for r in reports for f in r.failures]
    hints = [r.hint for r in reports if r.hint]
    return TestReport(
        runner=" + ".join(r.runner for r in reports) or "none",
        command=tuple(command),
        passed=sum(r.passed for r in reports),
        failed=sum(r.failed for r in reports),
        errors=sum(r.errors for r in reports),
        skipped=sum(r.skipped for r in reports),
        duration=sum(r.duration for r in reports),
        failures=tuple(failures),
        exit_code=exit_code,
        timed_out=any(r.timed_out for r in reports),
        output=cap_text(output, _CONSOLE_LIMIT),
        hint="; ".join(hints) or None,
        parts=tuple(part for r in reports for part in (r.parts or (r,))),
        cached=tuple(folder for r in reports for folder in r.cached),
    )
