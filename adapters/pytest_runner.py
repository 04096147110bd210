"""Run pytest in a directory and turn its JUnit XML into a :class:`TestReport`."""

from __future__ import annotations

import asyncio
import configparser
import re
import shutil
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

from adapters.locate import frame_in, innermost, is_assertion
from adapters.pyenv import child_env, finish_report, python_env
from adapters.results import CommandResult, TestFailure, TestReport, cap_text, command_report
from adapters.shell import Shell, scratch_dir

__all__ = ["PytestRunner"]

_FAILURE_LIMIT = 4000
_COLLECTING = re.compile(r"ERROR collecting (\S+)")
_SUMMARY = re.compile(r"^[=\s]*(\d+ [a-z]+(?:, \d+ [a-z]+)*) in [\d.]+s\b.*$", re.MULTILINE)
# pytest 9's ``SUBFAILED(n=3) tests/test_x.py::T::test_y - ...`` and pytest-subtests'
# ``(n=3) SUBFAIL tests/test_x.py::T::test_y - ...`` (short test summary lines)
_SUBFAILED = re.compile(
    r"^(?P<pre>(?:[\[(].*?[\])] ?)*) ?SUBFAIL(?:ED)?(?P<desc>.*?) (?P<node>\S+\.py::\S+)"
    r"(?: - .*)?$",
    re.MULTILINE,
)
_AGGREGATE = re.compile(r"^contains \d+ failed subtests?$")
_RAISED = re.compile(r"^\S[^\n]*?:\d+: (?P<name>[A-Za-z_][\w.]*)\s*$", re.MULTILINE)
# a failing doctest: pytest's numbered listing of the docstring, ending at the example
_DOCTEST_EXAMPLE = re.compile(r"^\d{3,} \s*>>> ")
_DOCTEST_END = re.compile(r":\d+: (?:DocTestFailure|UnexpectedException)\s*$", re.MULTILINE)
_COV_OPTION = re.compile(r"(?:^|\s)--cov(?:=|\s|$)")
_INI_SECTION = re.compile(r"^\[(?:tool:)?pytest\]\s*$", re.MULTILINE)


class PytestRunner:
    """Toolchain adapter for pytest."""

    name: str = "pytest"
    extra_args: tuple[str, ...] = ()  # the user's `tests.args`, after ours, before the targets

    def __init__(self, python: str | None = None) -> None:
        self._python = python

    def detect(self, root: Path) -> bool:
        """True if ``root`` looks like a pytest project."""
        return self.detect_reason(root) is not None

    def detect_reason(self, root: Path) -> str | None:
        """Which marker made :meth:`detect` succeed, e.g. ``"pytest.ini"``; None if none."""
        if (root / "pytest.ini").is_file():
            return "pytest.ini"
        table = _pyproject_pytest_table(root / "pyproject.toml")
        if table is not None:
            return f"pyproject.toml [{table}]"
        for cfg in ("tox.ini", "setup.cfg"):
            match = _INI_SECTION.search(_read(root / cfg))
            if match:
                return f"{cfg} {match.group(0).strip()}"
        if (root / "conftest.py").is_file():
            return "conftest.py"
        test_file = _find_test_file(root)
        return test_file and f"test files such as {test_file}"

    def interpreter(self, project_root: Path) -> str:
        """The Python that should run the project's tests."""
        return python_env(project_root, self._python).python

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """Run pytest in ``run_root`` with ``project_root``'s interpreter."""
        env_info = python_env(project_root, self._python)
        tmpdir = scratch_dir(shell, "agent-lsp-junit-")
        junit = tmpdir / "junit.xml"
        argv = (
            env_info.python,
            *("-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit2"),
            f"--junitxml={junit}",
            *(("--no-cov",) if _adds_coverage(run_root, project_root) else ()),
            *self.extra_args,
            *targets,
        )
        try:
            result = await shell.run(argv, cwd=run_root, timeout=timeout, env=child_env(run_root))
            report = await asyncio.to_thread(_build_report, result, junit, run_root, timeout)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        return finish_report(report, result, env_info, "pytest")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _adds_coverage(*roots: Path) -> bool:
    """Whether the pytest config in one of ``roots`` turns pytest-cov on (``--cov`` in its
    addopts): the run then says ``--no-cov``, as the JavaScript runners run without coverage
    (a ``--cov-fail-under`` cannot be met by a run of some of the tests)."""
    return any(_COV_OPTION.search(_addopts(root)) for root in dict.fromkeys(roots))


def _addopts(root: Path) -> str:
    """The ``addopts`` of the pytest config files in ``root`` (pytest.ini, pyproject.toml,
    tox.ini, setup.cfg), run together."""
    found: list[str] = []
    try:
        tool = tomllib.loads(_read(root / "pyproject.toml")).get("tool")
    except tomllib.TOMLDecodeError:
        tool = None
    table = tool.get("pytest") if isinstance(tool, dict) else None
    if isinstance(table, dict):
        for options in (table.get("ini_options"), table):
            value = options.get("addopts") if isinstance(options, dict) else None
            found += [value] if isinstance(value, str) else [str(v) for v in value or ()]
    for name in ("pytest.ini", "tox.ini", "setup.cfg"):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(_read(root / name))
        except configparser.Error:
            continue
        for section in ("pytest", "tool:pytest"):
            if parser.has_option(section, "addopts"):
                found.append(parser.get(section, "addopts"))
    return " ".join(found)


def _pyproject_pytest_table(path: Path) -> str | None:
    try:
        data = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError:
        return None
    tool = data.get("tool")
    pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(pytest_table, dict):
        return None
    return "tool.pytest.ini_options" if "ini_options" in pytest_table else "tool.pytest"


def _find_test_file(root: Path) -> str | None:
    searches = ((root, root.glob), (root / "tests", (root / "tests").rglob))
    for folder, glob in searches:
        if folder.is_dir():
            for path in chain(glob("test_*.py"), glob("*_test.py")):
                if path.is_file():
                    return path.relative_to(root).as_posix()
    return None


def _build_report(result: CommandResult, junit: Path, run_root: Path, timeout: float) -> TestReport:
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures: list[TestFailure] = []
    cases = _junit_cases(junit)
    if cases is not None:
        subtests = _subtest_labels(result.output)
        for case in cases:
            problems = _problems(case)
            for kind, problem in problems:
                counts[kind] += 1
                failures.append(_case_failure(case, problem, run_root, subtests))
            if problems:
                continue
            if case.find("skipped") is not None:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    elif not result.timed_out:
        counts.update(_console_counts(result.output))
    if result.exit_code not in (0, 5) and not counts["failed"] and not counts["errors"]:
        counts["errors"] = 1
        failures.append(_console_failure(result, run_root, timeout))
    return command_report("pytest", result, counts, failures)


def _problems(case: ET.Element) -> list[tuple[str, ET.Element]]:
    """The case's failures and errors: one per failing subtest, without pytest's summary
    failure ``contains 2 failed subtests`` of their parent test."""
    found = [
        ("failed" if elem.tag == "failure" else "errors", elem)
        for elem in case
        if elem.tag in ("failure", "error")
    ]
    own = [(kind, e) for kind, e in found if not _AGGREGATE.match(e.get("message", ""))]
    return own if own else found


def _subtest_labels(output: str) -> dict[str, list[str]]:
    """Node id -> the labels of its failed subtests, in order (``(n=3)``)."""
    labels: dict[str, list[str]] = {}
    for match in _SUBFAILED.finditer(output):
        label = (match["pre"] or match["desc"]).strip()
        labels.setdefault(match["node"], []).append(label)
    return labels


def _junit_cases(junit: Path) -> list[ET.Element] | None:
    try:
        return list(ET.parse(junit).getroot().iter("testcase"))
    except (OSError, ET.ParseError):
        return None


def _console_counts(output: str) -> dict[str, int]:
    matches = _SUMMARY.findall(output)
    counts: dict[str, int] = {}
    if not matches:
        return counts
    aliases = {"error": "errors", "xfailed": "skipped", "xpassed": "passed"}
    for part in matches[-1].split(", "):
        number, word = part.split(" ", 1)
        key = aliases.get(word, word)
        if key in ("passed", "failed", "errors", "skipped"):
            counts[key] = counts.get(key, 0) + int(number)
    return counts


def _case_failure(
    case: ET.Element, elem: ET.Element, run_root: Path, subtests: dict[str, list[str]]
) -> TestFailure:
    name = case.get("name", "")
    test_file, test_id = _test_location(case.get("classname", ""), name, run_root)
    test_file = case.get("file") or test_file
    labels = subtests.get(test_id)
    if labels and not _AGGREGATE.match(elem.get("message", "")):
        test_id = f"{test_id} {labels.pop(0)}"
    text = elem.text or ""
    raised = _RAISED.findall(text)
    location = None
    if test_file is not None and raised and is_assertion(raised[-1]):
        location = frame_in(text, test_file, run_root)  # the test's line, not a helper's
    location = location or innermost(text, run_root)
    if location is not None:
        file, line = location
    else:
        file = test_file
        line_attr = case.get("line")
        line = int(line_attr) + 1 if line_attr else _def_line(run_root, test_file, name)
    message = _doctest_message(text) or _first_line(elem.get("message", ""))
    if not message or message == "collection failure":
        detail = _last_error_line(text)
        message = f"{message}: {detail}" if message and detail else message or detail
    return TestFailure(test_id, file, line, message, cap_text(text, _FAILURE_LIMIT))


def _console_failure(result: CommandResult, run_root: Path, timeout: float) -> TestFailure:
    output = result.output
    collecting = _COLLECTING.search(output)
    test_id = collecting.group(1) if collecting else "pytest"
    location = innermost(output, run_root)
    file, line = location if location else (collecting and collecting.group(1), None)
    if result.timed_out:
        message = f"pytest timed out after {timeout:g}s"
    else:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        fallback = lines[-1] if lines else f"pytest exited with code {result.exit_code}"
        message = _last_error_line(output) or fallback
    return TestFailure(test_id, file, line, message, cap_text(output, _FAILURE_LIMIT))


def _test_location(classname: str, name: str, run_root: Path) -> tuple[str | None, str]:
    """Map JUnit classname/name to (file, pytest node id)."""
    parts, tail = (classname.split("."), [name]) if classname else (name.split("."), [])
    for i in range(len(parts), 0, -1):
        rel = "/".join(parts[:i]) + ".py"
        if (run_root / rel).is_file():
            return rel, "::".join([rel, *parts[i:], *tail])
    return None, "::".join(["/".join(parts) + ".py", *tail])


def _def_line(run_root: Path, file: str | None, name: str) -> int | None:
    if file is None:
        return None
    pattern = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(name.split('[')[0])}\s*\(")
    for number, text in enumerate(_read(run_root / file).splitlines(), 1):
        if pattern.match(text):
            return number
    return None


def _doctest_message(text: str) -> str:
    """What a failing doctest example did: ``>>> double(3): expected 7, got 6``, or the
    exception it raised (pytest's report lists the docstring's lines up to the example, then
    doctest's own words)."""
    lines = text.splitlines()
    examples = [i for i, ln in enumerate(lines) if _DOCTEST_EXAMPLE.match(ln)]
    if not examples or not _DOCTEST_END.search(text):
        return ""
    said = lines[examples[-1]].split(">>>", 1)[1].strip()
    rest = [ln for ln in lines[examples[-1] + 1 :] if ln.strip()]
    if not rest or rest[0].startswith("UNEXPECTED EXCEPTION: "):
        return f">>> {said}: {rest[0]}" if rest else f">>> {said}"
    parts: dict[str, list[str]] = {"Expected": [], "Got": []}
    current = None
    for line in rest:
        if line.rstrip() in ("Expected:", "Got:"):
            current = line.rstrip()[:-1]
        elif current and line.startswith("    "):
            parts[current].append(line.strip())
        else:
            current = None
    if not parts["Expected"] and not parts["Got"]:
        return f">>> {said}: {rest[0].strip()}"  # a diff report, "Expected nothing" ...
    expected, got = (cap_text(" ".join(parts[k]) or "nothing", 200) for k in ("Expected", "Got"))
    return f">>> {said}: expected {expected}, got {got}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def _last_error_line(text: str) -> str:
    errors = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ") and ln[1:].strip()]
    return errors[-1] if errors else ""
