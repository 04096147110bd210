"""jest and vitest on fixtures shaped like real projects: our totals against the project's own
``npm test`` run, the project's environment and script options, reports that survive a crash
of the runner's JSON, and failures located where the test failed."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from adapters import JestRunner, PosixShell, TestReport, VitestRunner
from tests.adapters.conftest import ProjectFactory
from tests.conftest import which_or_skip

_JEST_TESTS = re.compile(r"^Tests:\s+(?P<counts>.*?), \d+ total", re.MULTILINE)
_VITEST_TESTS = re.compile(r"^\s+Tests\s+(?P<counts>[^(\n]*)\(", re.MULTILINE)


@pytest.fixture(autouse=True)
def _plain_user_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's shell without colour settings, so both runs see the same environment."""
    for key in ("NO_COLOR", "FORCE_COLOR", "CI"):
        monkeypatch.delenv(key, raising=False)


async def _jest(root: Path, *targets: str) -> TestReport:
    return await JestRunner().run(root, root, targets, shell=PosixShell(), timeout=120)


async def _vitest(root: Path, *targets: str) -> TestReport:
    return await VitestRunner().run(root, root, targets, shell=PosixShell(), timeout=120)


def _own_totals(root: Path) -> tuple[dict[str, int], int]:
    """The project's own ``npm test``: its test totals as the runner printed them, and its code."""
    npm = which_or_skip("npm")
    proc = subprocess.run(
        [npm, "test", "--silent"],
        cwd=root,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    match = _JEST_TESTS.search(output) or _VITEST_TESTS.search(output)
    assert match is not None, output
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for count, word in re.findall(r"(\d+) (\w+)", match["counts"]):
        totals[word] = int(count)
    return totals, proc.returncode


def _totals(report: TestReport) -> dict[str, int]:
    return {"passed": report.passed, "failed": report.failed, "skipped": report.skipped}


async def test_colour_tests_see_the_users_environment(js_project: ProjectFactory) -> None:
    root = js_project("js-jest", "colour")
    report = await _jest(root)
    own, code = _own_totals(root)
    assert _totals(report) == own == {"passed": 7, "failed": 2, "skipped": 1}
    assert (report.exit_code, code) == (1, 1)
    assert {f.test_id for f in report.failures} == {
        "src/calc.test.js::calc adds wrongly",
        "src/calc.test.js::calc divides by zero",
    }


async def test_a_circular_value_in_a_failing_assertion_keeps_every_result(
    js_project: ProjectFactory,
) -> None:
    root = js_project("js-jest", "circular")
    report = await _jest(root)
    own, _ = _own_totals(root)
    assert _totals(report) == own == {"passed": 3, "failed": 3, "skipped": 1}
    assert report.errors == 0
    by_id = {f.test_id: f for f in report.failures}
    circular = by_id["src/circular.test.js::a circular value that differs"]
    assert (circular.file, circular.line) == ("src/circular.test.js", 8)
    assert circular.message.startswith("Error: expect(received).toEqual(expected)")
    assert '"parent": [Circular]' in circular.output


async def test_vitest_reports_a_circular_value_too(js_project: ProjectFactory) -> None:
    # vitest's JSON reporter keeps only message strings: the same failure does not break it
    root = js_project("js-vitest", "circular")
    report = await _vitest(root)
    own, _ = _own_totals(root)
    assert _totals(report) == own == {"passed": 2, "failed": 3, "skipped": 1}
    by_id = {f.test_id: (f.file, f.line) for f in report.failures}
    assert by_id["src/circular.test.js::a circular value that differs"] == (
        "src/circular.test.js",
        10,
    )


async def test_jest_keeps_the_scripts_options_and_variables(js_project: ProjectFactory) -> None:
    # "APP_MODE=strict jest --passWithNoTests src/": a file without tests still fails in jest
    # itself (--passWithNoTests only covers finding no files), so both runs count it.
    root = js_project("js-jest", "no-tests")
    report = await _jest(root)
    own, code = _own_totals(root)
    assert _totals(report) == own == {"passed": 3, "failed": 2, "skipped": 1}
    assert (report.errors, report.exit_code, code) == (1, 1, 1)
    ids = {f.test_id for f in report.failures}
    assert "src/setup-shared.test.js" in ids
    assert not any(i.startswith("src/env.test.js") for i in ids)


async def test_vitest_pass_with_no_tests_from_the_script(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest", "no-tests", "pass-no-tests")
    report = await _vitest(root)
    own, code = _own_totals(root)
    assert _totals(report) == own == {"passed": 2, "failed": 2, "skipped": 1}
    assert (report.errors, report.exit_code, code) == (0, 1, 1)
    assert "src/fixtures.test.js" not in {f.test_id for f in report.failures}
    fixed = (root / "src/calc.test.js").read_text().replace("toBe(5)", "toBe(4)")
    fixed = fixed.replace("div(1, 0)).toBe(0)", "div(4, 2)).toBe(2)")
    (root / "src/calc.test.js").write_text(fixed)
    green = await _vitest(root)
    assert green.ok, green.output
    assert (green.passed, green.errors) == (4, 0)


async def test_vitest_typecheck_from_the_script_counts_type_tests(
    js_project: ProjectFactory,
) -> None:
    root = js_project("js-vitest-ts")
    report = await _vitest(root)
    own, code = _own_totals(root)
    assert _totals(report) == own == {"passed": 5, "failed": 0, "skipped": 0}
    assert report.ok, report.output
    assert code == 0


async def test_transform_error_carries_esbuilds_message(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest", "transform")
    report = await _vitest(root, "src/shapes.test.ts")
    assert (report.passed, report.failed, report.errors) == (0, 0, 1)
    (failure,) = report.failures
    assert (failure.test_id, failure.file, failure.line) == (
        "src/shapes.test.ts",
        "src/shapes.test.ts",
        7,
    )
    assert failure.message == (
        'Transform failed: src/shapes.test.ts:7:33: ERROR: Expected "}" but found ";"'
    )


async def test_missing_preset_names_it_and_says_how_to_install(
    js_project: ProjectFactory,
) -> None:
    root = js_project("js-jest", "preset")
    report = await _jest(root)
    assert (report.passed, report.failed, report.errors) == (0, 0, 1)
    assert report.failures[0].message == f"Preset ts-jest not found relative to rootDir {root}."
    assert report.hint == (
        "ts-jest is not installed: add it (`npm install --save-dev ts-jest`) or run "
        f"`npm install` in {root} if another package should bring it"
    )
    assert report.summary().endswith(f"; hint: {report.hint}")


async def test_failures_are_located_at_the_tests_own_frame(js_project: ProjectFactory) -> None:
    root = js_project("js-jest", "shared-assert")
    report = await _jest(root, "src/shared.test.js")
    assert (report.passed, report.failed) == (0, 2)
    by_id = {f.test_id: (f.file, f.line) for f in report.failures}
    assert by_id == {
        # the assertion is in a function shared by tests: the test's own call is the place
        "src/shared.test.js::sums through a shared assertion": ("src/shared.test.js", 9),
        # the received value quotes "src/calc.js:3:4", an existing file of the project
        "src/shared.test.js::a received value quoting a path": ("src/shared.test.js", 13),
    }


async def test_several_files_run_in_workers(js_project: ProjectFactory) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: jest runs in band")
    root = js_project("js-jest", "many")
    report = await _jest(root)
    assert (report.passed, report.failed) == (26, 2)
    pids = set(re.findall(r"pid=(\d+)", report.output))
    assert len(pids) >= 2, report.output  # each worker is a process of its own
    one = await _jest(root, "src/work1.test.js")
    assert (one.passed, one.failed) == (4, 0)
    assert len(set(re.findall(r"pid=(\d+)", one.output))) == 1


async def test_a_script_running_in_band_is_honoured(js_project: ProjectFactory) -> None:
    root = js_project("js-jest", "many", "in-band")
    report = await _jest(root)
    assert (report.passed, report.failed) == (26, 2)
    assert len(set(re.findall(r"pid=(\d+)", report.output))) == 1
