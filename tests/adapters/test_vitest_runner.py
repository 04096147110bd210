"""VitestRunner on tests/fixtures/js-vitest (node_modules installed once per session)."""

from __future__ import annotations

from pathlib import Path

from adapters import PosixShell, TestReport, VitestRunner, detect_toolchain
from tests.adapters.conftest import ProjectFactory


async def _run(root: Path, *targets: str, limit: float = 60) -> TestReport:
    return await VitestRunner().run(root, root, targets, shell=PosixShell(), timeout=limit)


async def test_full_suite_counts_and_locations(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest")
    assert isinstance(detect_toolchain(root), VitestRunner)
    report = await _run(root)
    assert (report.passed, report.failed, report.errors, report.skipped) == (2, 2, 0, 1)
    assert report.exit_code == 1
    by_id = {f.test_id: f for f in report.failures}
    wrong = by_id["src/calc.test.js::calc adds wrongly"]
    assert (wrong.file, wrong.line) == ("src/calc.test.js", 10)
    assert wrong.message.startswith("AssertionError: expected 4 to be 5")
    zero = by_id["src/calc.test.js::calc divides by zero"]
    assert (zero.file, zero.line) == ("src/calc.js", 7)
    assert zero.message == "Error: division by zero"
    assert not (root / "node_modules/.vite").is_symlink()


async def test_targets(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest")
    report = await _run(root, "src/more.test.js")
    assert report.ok, report.output
    assert (report.passed, report.failed, report.skipped) == (1, 0, 0)
    named = await _run(root, "src/calc.test.js::calc adds")
    assert named.ok, named.output
    assert (named.passed, named.failed) == (1, 0)


async def test_syntax_error_is_a_located_error(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest", "syntax-error")
    report = await _run(root, "src/broken.test.js")
    assert (report.passed, report.failed, report.errors) == (0, 0, 1)
    failure = report.failures[0]
    assert failure.test_id == "src/broken.test.js"
    assert (failure.file, failure.line) == ("src/broken.test.js", 5)
    assert "Parse failure" in failure.message or "SyntaxError" in failure.message


async def test_no_tests_is_reported_honestly(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest", "no-tests")
    report = await _run(root, "src/fixtures.test.js", "src/more.test.js")
    # vitest fails the run for a matched file without tests, with zero failed tests
    assert (report.passed, report.failed, report.errors) == (1, 0, 1)
    assert report.failures[0].test_id == "src/fixtures.test.js"
    assert "no tests found in this file" in report.failures[0].message
    nothing = await _run(root, "does-not-match-anything")
    assert (nothing.passed, nothing.failed, nothing.errors) == (0, 0, 0)
    assert nothing.failures == ()
    assert not nothing.ok
    assert "(no tests collected)" in nothing.summary()


async def test_hang_times_out(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest", "hang")
    report = await _run(root, "src/hang.test.js", limit=3)
    assert report.timed_out
    assert report.errors == 1
    assert "timed out after 3s" in report.failures[0].message
    assert report.duration < 10


async def test_megabytes_of_output(js_project: ProjectFactory) -> None:
    root = js_project("js-vitest", "loud")
    report = await _run(root, "src/loud.test.js")
    assert (report.passed, report.failed) == (0, 1)
    assert len(report.output) < 30_000
    assert (report.failures[0].file, report.failures[0].line) == ("src/loud.test.js", 7)


async def test_extra_args_reach_vitest(js_project: ProjectFactory) -> None:
    """`tests.args` (`detect_toolchain(root, extra_args)`): after vitest's own options."""
    root = js_project("js-vitest")
    adapter = detect_toolchain(root, ["--testNamePattern", "adds more"])
    assert isinstance(adapter, VitestRunner)
    report = await adapter.run(root, root, [], shell=PosixShell(), timeout=60)
    assert report.ok, report.output
    assert (report.passed, report.failed, report.errors) == (1, 0, 0)  # the others did not run
    assert "--testNamePattern adds more" in " ".join(report.command)
