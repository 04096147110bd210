"""Parse the ``go test -json`` event stream (plus the plain build output around it)."""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from adapters.locate import project_path
from adapters.results import CommandResult, TestFailure, TestReport, cap_text

__all__ = ["build_go_report", "package_dir"]

_FAILURE_LIMIT = 4000
_CONSOLE_LIMIT = 20_000
_MAX_LINES = 400  # kept per test: the head, then the tail
_T_LOG = re.compile(r"^\s+(?P<file>[\w.\-/]+\.go):(?P<line>\d+): (?P<msg>.*)")
_FRAME = re.compile(r"^\t(?P<file>\S+\.go):(?P<line>\d+)")
_COMPILE = re.compile(r"^(?P<file>[^\s:#][^:\n]*\.go):(?P<line>\d+)(?::\d+)?: (?P<msg>.*)")
_BUILD_FAIL = re.compile(r"^FAIL\s+(?P<pkg>\S+)\s+\[(?:build|setup) failed\]")
_TIMEOUT = re.compile(r"panic: test timed out after (\S+)")
_CACHED = re.compile(r"^ok\s+\S+\s+\(cached\)")


@dataclass
class _Test:
    status: str | None = None
    lines: list[str] = field(default_factory=list[str])

    def add(self, text: str) -> None:
        if len(self.lines) >= _MAX_LINES:
            del self.lines[_MAX_LINES // 4]  # keep the head and a moving tail
        self.lines.append(text)


@dataclass
class _Stream:
    tests: dict[tuple[str, str], _Test] = field(default_factory=dict[tuple[str, str], _Test])
    packages: dict[str, _Test] = field(default_factory=dict[str, _Test])
    builds: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    failed_builds: set[str] = field(default_factory=set[str])
    cached: list[str] = field(default_factory=list[str])  # packages replayed from the cache

    def event(self, data: dict[str, Any]) -> None:
        action, pkg = str(data.get("Action", "")), str(data.get("Package", ""))
        text = str(data.get("Output", ""))
        if action == "build-output":
            self.builds.setdefault(_pkg_of(str(data.get("ImportPath", ""))), []).append(text)
            return
        name = data.get("Test")
        entry = (
            self.tests.setdefault((pkg, str(name)), _Test())
            if name
            else self.packages.setdefault(pkg, _Test())
        )
        if action == "output":
            entry.add(text)
            if not name and _CACHED.match(text) and pkg not in self.cached:
                self.cached.append(pkg)
        elif action in ("pass", "fail", "skip"):
            entry.status = action
            if action == "fail" and not name and data.get("FailedBuild"):
                self.failed_builds.add(pkg)

    def plain(self, lines: list[str]) -> None:
        current = ""
        for line in lines:
            if line.startswith("# "):
                current = _pkg_of(line[2:])
                continue
            if _CACHED.match(line):
                self.cached.append(line.split()[1])
                continue
            failed = _BUILD_FAIL.match(line)
            if failed:
                self.failed_builds.add(failed["pkg"])
                current = ""
                continue
            self.builds.setdefault(current, []).append(line + "\n")


def _pkg_of(header: str) -> str:
    return header.split(" [", 1)[0].strip()


def package_dir(pkg: str, module: str | None) -> str | None:
    """The folder of import path ``pkg`` relative to the module root ("." for the root)."""
    if module and pkg == module:
        return "."
    if module and pkg.startswith(module + "/"):
        return pkg[len(module) + 1 :]
    return None


def _parse(lines: Iterable[str]) -> _Stream:
    stream = _Stream()
    plain: list[str] = []
    for line in lines:
        line = line.rstrip("\r\n")
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                data = None
            if isinstance(data, dict) and "Action" in data:
                stream.event(cast("dict[str, Any]", data))
                continue
        plain.append(line)
    stream.plain(plain)
    return stream


def _located(
    lines: list[str], pkgdir: str | None, run_root: Path
) -> tuple[str | None, int | None, str]:
    """(file, line, message) of a failed test from its output."""
    message = ""
    for text in lines:
        timeout = _TIMEOUT.search(text)
        if timeout:
            return None, None, f"test timed out after {timeout.group(1)} (go test -timeout)"
        log = _T_LOG.match(text)
        if log and pkgdir is not None:
            rel = project_path(posixpath.join(pkgdir, log["file"]), run_root)
            if rel is not None:
                return rel, int(log["line"]), log["msg"].strip()
        if text.startswith("panic: ") and not message:
            message = text.strip().removesuffix(" [recovered]")
    for text in lines:
        frame = _FRAME.match(text)
        if frame:
            rel = project_path(frame["file"], run_root)
            if rel is not None:
                return rel, int(frame["line"]), message or "test failed"
    return None, None, message or "test failed"


def _build_failure(pkg: str, lines: list[str], run_root: Path, pkgdir: str | None) -> TestFailure:
    block = "".join(lines)
    for text in lines:
        match = _COMPILE.match(text.rstrip("\n"))
        if match:
            rel = project_path(match["file"], run_root)
            if rel is not None:
                test_id = pkgdir or pkg or "go build"
                return TestFailure(test_id, rel, int(match["line"]), match["msg"].strip(), block)
    first = next((t.strip() for t in lines if t.strip()), "build failed")
    return TestFailure(
        pkgdir or pkg or "go build", None, None, first, cap_text(block, _FAILURE_LIMIT)
    )


def _read_stream(events: Path | None, fallback: str) -> _Stream:
    if events is not None:
        try:
            with events.open(encoding="utf-8", errors="replace") as handle:
                return _parse(handle)
        except OSError:
            pass
    return _parse(fallback.splitlines())


def build_go_report(
    result: CommandResult,
    events: Path | None,
    run_root: Path,
    module: str | None,
    timeout: float,
) -> TestReport:
    """Counts and located failures from the event file (or the console when there is none):
    leaf tests are counted, a parent only if it failed on its own; build and setup failures
    become one error per package, located at its first compile error."""
    stream = _read_stream(events, result.output)
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures: list[TestFailure] = []
    go_timeout = False
    names = {(pkg, name) for pkg, name in stream.tests}
    failed_pkgs: set[str] = set()
    for (pkg, name), test in stream.tests.items():
        children = [n for p, n in names if p == pkg and n.startswith(name + "/")]
        status = test.status
        if status is None and stream.packages.get(pkg, _Test()).status == "fail":
            status = "fail"  # still running when the binary died (panic, timeout)
        if status == "fail":
            child_failed = any(stream.tests[(pkg, c)].status == "fail" for c in children)
            failed_pkgs.add(pkg)
            if child_failed:
                continue
            counts["failed"] += 1
            pkgdir = package_dir(pkg, module)
            file, line, message = _located(test.lines, pkgdir, run_root)
            if file is None:
                said = [*stream.packages.get(pkg, _Test()).lines, *stream.builds.get("", [])]
                message = _unlocated(name, pkg, message, said)
            go_timeout = go_timeout or "go test -timeout" in message
            test_id = f"{pkgdir or pkg}::{name}"
            output = cap_text("".join(test.lines), _FAILURE_LIMIT)
            failures.append(TestFailure(test_id, file, line, message, output))
        elif not children:
            counts["passed" if status == "pass" else "skipped"] += status in ("pass", "skip")
    for block_pkg, lines in stream.builds.items():
        if any(_COMPILE.match(t.rstrip("\n")) for t in lines) or block_pkg in stream.failed_builds:
            counts["errors"] += 1
            failures.append(
                _build_failure(block_pkg, lines, run_root, package_dir(block_pkg, module))
            )
            failed_pkgs.add(block_pkg)
    for pkg in stream.failed_builds - failed_pkgs:
        counts["errors"] += 1
        failures.append(
            TestFailure(package_dir(pkg, module) or pkg, None, None, "build failed", "")
        )
    for pkg, entry in stream.packages.items():
        if entry.status == "fail" and pkg not in failed_pkgs:
            counts["errors"] += 1
            file, line, message = _located(entry.lines, package_dir(pkg, module), run_root)
            text = "".join(entry.lines)
            failures.append(
                TestFailure(
                    package_dir(pkg, module) or pkg,
                    file,
                    line,
                    message if message != "test failed" else _last(text),
                    cap_text(text, _FAILURE_LIMIT),
                )
            )
    if result.timed_out or (result.exit_code not in (0, None) and not failures):
        counts["errors"] += 1
        message = (
            f"go test timed out after {timeout:g}s" if result.timed_out else _last(result.output)
        )
        failures.append(
            TestFailure("go test", None, None, message, cap_text(result.output, _FAILURE_LIMIT))
        )
    return TestReport(
        runner="go test",
        command=result.argv,
        duration=result.duration,
        failures=tuple(failures),
        exit_code=result.exit_code,
        timed_out=result.timed_out or go_timeout,
        output=cap_text(result.output, _CONSOLE_LIMIT),
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        skipped=counts["skipped"],
        cached=tuple(package_dir(pkg, module) or pkg for pkg in stream.cached),
    )


_EXIT = re.compile(r"^exit status \d+$")


def _unlocated(name: str, pkg: str, message: str, said: list[str]) -> str:
    """The message of a failed test go gave no file:line for: what it said, else how the
    test binary ended (``os.Exit``, a crash), with the test and its package named."""
    if message != "test failed":
        return message  # a panic, a timeout: go's own words
    ended = next((t.strip() for t in reversed(said) if _EXIT.match(t.strip())), "")
    how = ended or "no message and no position"
    return f"{name} failed ({how}: did it call os.Exit or end the test binary?) [package {pkg}]"


def _last(text: str) -> str:
    rows = [row.strip() for row in text.splitlines() if row.strip() and not row.startswith("{")]
    return rows[-1] if rows else "go test failed"
