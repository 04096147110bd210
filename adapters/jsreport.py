"""Turn jest's ``--json`` (and vitest's jest-compatible JSON reporter) into a TestReport."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from adapters.locate import js_location, relative_to
from adapters.node import read_json
from adapters.results import CommandResult, TestFailure, TestReport, cap_text

__all__ = ["build_js_report"]

_FAILURE_LIMIT = 4000
_CONSOLE_LIMIT = 20_000
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_STACK_LINE = re.compile(r"^\s+at ")
_ERROR_LINE = re.compile(r"^\s*(?:[A-Z]\w*Error|Error|Parse failure|Cannot find module)\b.*")
_SKIPPED = frozenset({"pending", "skipped", "todo", "disabled", "focused"})
_NO_TESTS = re.compile(r"No test suite found in file|Your test suite must contain at least one")
_ASSERTION = re.compile(r"^\s*(?:\w*AssertionError\b|Error: expect\(|expect\()", re.MULTILINE)
_ESBUILD = re.compile(r"^(?P<where>\S+:\d+:\d+): ERROR: (?P<text>.+)$", re.MULTILINE)
_VALIDATION = re.compile(r"Validation Error:\s*\n\s*\n?\s*(?P<text>\S.*)")
_MISSING = re.compile(r"Cannot find (?:package|module) '(?P<name>[^']+)'")


def _read_report(path: Path) -> dict[str, Any] | None:
    """The runner's report: one JSON document, or JSON lines of files (agent-lsp's jest
    reporter, which writes each file as it finishes)."""
    if path.suffix != ".jsonl":
        return read_json(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    files: list[object] = []
    for line in lines:
        try:
            record: object = json.loads(line)
        except ValueError:
            continue  # a line cut short by a killed run
        if isinstance(record, dict) and "name" in record:
            files.append(cast("object", record))
    return {"testResults": files}


def _list(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [cast("dict[str, Any]", v) for v in cast("list[object]", value) if isinstance(v, dict)]


def _plain(text: str) -> str:
    return _ANSI.sub("", text)


def _message(text: str, run_root: Path) -> str:
    """The error itself: the lines before the stack, folded into one line."""
    lines: list[str] = []
    for line in _plain(text).splitlines():
        if _STACK_LINE.match(line):
            break
        if line.strip():
            lines.append(line.strip())
    message = " ".join(lines)[:500] or "test failed"
    for base in {str(run_root), str(run_root.resolve())}:
        message = message.replace(base + "/", "")
    return message


def _suite_message(text: str, run_root: Path) -> str:
    """For a file that failed to run: the most telling error line of jest's long message."""
    plain = _plain(text)
    if _NO_TESTS.search(plain):
        return "no tests found in this file (the runner counts it as a failed file)"
    esbuild = [f"{m['where']}: ERROR: {m['text']}" for m in _ESBUILD.finditer(plain)]
    if esbuild:  # vitest's transform error: esbuild's own lines carry the message
        return _message("Transform failed: " + "; ".join(esbuild), run_root)
    for line in plain.splitlines():
        if _ERROR_LINE.match(line):
            return _message(line, run_root)
    rows = [row.strip() for row in plain.splitlines() if row.strip() and "●" not in row]
    return _message(rows[0], run_root) if rows else "test file failed to run"


def _case_id(rel: str, case: dict[str, Any]) -> str:
    titles = [str(t) for t in cast("list[object]", case.get("ancestorTitles") or [])]
    return f"{rel}::{' '.join([*titles, str(case.get('title', ''))])}"


def _case_line(case: dict[str, Any]) -> int | None:
    location = case.get("location")
    if isinstance(location, dict):
        line = cast("dict[str, object]", location).get("line")
        if isinstance(line, int):
            return line
    return None


def _file_failures(
    suite: dict[str, Any], run_root: Path, counts: dict[str, int]
) -> list[TestFailure]:
    name = str(suite.get("name", ""))
    rel = relative_to(Path(name), run_root) or name
    failures: list[TestFailure] = []
    cases = _list(suite.get("assertionResults"))
    for case in cases:
        status = str(case.get("status", ""))
        if status == "passed":
            counts["passed"] += 1
        elif status in _SKIPPED:
            counts["skipped"] += 1
        elif status == "failed":
            counts["failed"] += 1
            text = "\n".join(
                str(m) for m in cast("list[object]", case.get("failureMessages") or [])
            )
            where = _failure_location(_plain(text), rel, run_root)
            file, line = where if where else (rel, _case_line(case))
            failures.append(
                TestFailure(
                    _case_id(rel, case),
                    file,
                    line,
                    _message(text, run_root),
                    cap_text(_plain(text), _FAILURE_LIMIT),
                )
            )
    suite_text = str(suite.get("message") or suite.get("failureMessage") or "")
    if suite.get("status") == "failed" and not failures:
        counts["errors"] += 1
        where = js_location(_plain(suite_text), run_root) or _import_line(suite_text, rel, run_root)
        file, line = where if where else (rel, None)
        message = _suite_message(suite_text, run_root) if suite_text else "test file failed"
        failures.append(
            TestFailure(rel, file, line, message, cap_text(_plain(suite_text), _FAILURE_LIMIT))
        )
    return failures


def _stack(text: str) -> str:
    """The stack frames of an error message: never the message, whose expected and received
    values may quote paths of their own."""
    return "\n".join(line for line in text.splitlines() if _STACK_LINE.match(line))


def _failure_location(text: str, rel: str, run_root: Path) -> tuple[str, int] | None:
    """Where a failed test failed: for an assertion, the test file's own frame (an assertion
    function shared by tests is not the place); for a thrown error, where it was thrown."""
    stack = _stack(text)
    if _ASSERTION.search(text):
        for frame in stack.splitlines():
            where = js_location(frame, run_root)
            if where is not None and where[0] == rel:
                return where
    return js_location(stack, run_root)


def _import_line(text: str, rel: str, run_root: Path) -> tuple[str, int] | None:
    """For "Cannot find package 'x'": the line of ``rel`` that imports it."""
    missing = _MISSING.search(text)
    if missing is None:
        return None
    quoted = (f"'{missing['name']}'", f'"{missing["name"]}"')
    try:
        lines = (run_root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines, 1):
        if any(q in line for q in quoted):
            return rel, number
    return None


def _console_failure(
    runner: str, result: CommandResult, run_root: Path, timeout: float
) -> TestFailure:
    output = _plain(result.output)
    where = js_location(output, run_root)
    if result.timed_out:
        message = f"{runner} timed out after {timeout:g}s"
    else:
        validation = _VALIDATION.search(output)  # jest's config check: the line after it
        errors = [validation["text"]] if validation else []
        errors += [ln.strip() for ln in output.splitlines() if _ERROR_LINE.match(ln)]
        rows = [ln.strip() for ln in output.splitlines() if ln.strip()]
        fallback = rows[-1] if rows else f"{runner} exited with code {result.exit_code}"
        message = _message(errors[0], run_root) if errors else fallback
    file, line = where if where else (None, None)
    return TestFailure(runner, file, line, message, cap_text(output, _FAILURE_LIMIT))


def build_js_report(
    runner: str, result: CommandResult, report_file: Path, run_root: Path, timeout: float
) -> TestReport:
    """Counts and located failures from the runner's JSON file (console fallback)."""
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures: list[TestFailure] = []
    data = _read_report(report_file)
    if data is not None:
        for suite in _list(data.get("testResults")):
            failures += _file_failures(suite, run_root, counts)
    total = sum(counts.values())
    broken = result.exit_code not in (0, None) and total > 0
    if (
        result.timed_out
        or (data is None and result.exit_code != 0)
        or (broken and not counts["failed"] and not counts["errors"])
    ):
        counts["errors"] += 1
        failures.append(_console_failure(runner, result, run_root, timeout))
    return TestReport(
        runner=runner,
        command=result.argv,
        duration=result.duration,
        failures=tuple(failures),
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        output=cap_text(_plain(result.output), _CONSOLE_LIMIT),
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        skipped=counts["skipped"],
    )
