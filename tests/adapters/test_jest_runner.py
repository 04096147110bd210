"""JestRunner on tests/fixtures/js-jest (node_modules installed once per session)."""

from __future__ import annotations

from pathlib import Path

from adapters import JestRunner, PosixShell, ShadowWorkspace, TestReport, detect_toolchain
from tests.adapters.conftest import ProjectFactory


async def _run(root: Path, *targets: str, limit: float = 60) -> TestReport:
    return await JestRunner().run(root, root, targets, shell=PosixShell(), timeout=limit)


async def test_full_suite_counts_and_locations(js_project: ProjectFactory) -> None:
    root = js_project("js-jest")
    assert isinstance(detect_toolchain(root), JestRunner)
    report = await _run(root)
    assert (report.passed, report.failed, report.errors, report.skipped) == (2, 2, 0, 1)
    assert report.exit_code == 1
    assert not report.ok
    by_id = {f.test_id: f for f in report.failures}
    assert set(by_id) == {
        "src/calc.test.js::calc adds wrongly",
        "src/calc.test.js::calc divides by zero",
    }
    wrong = by_id["src/calc.test.js::calc adds wrongly"]
    assert (wrong.file, wrong.line) == ("src/calc.test.js", 9)
    assert "Expected: 5" in wrong.message
    assert "Received: 4" in wrong.message
    zero = by_id["src/calc.test.js::calc divides by zero"]
    assert (zero.file, zero.line) == ("src/calc.js", 7)  # where the error was thrown
    assert zero.message == "Error: division by zero"
    assert report.summary().startswith("2 passed, 2 failed, 0 errors, 1 skipped in ")


async def test_single_file_with_argv_parsing_test(js_project: ProjectFactory) -> None:
    # One file runs in-process: a test reading process.argv must not see jest's flags.
    root = js_project("js-jest", "argv-exit")
    report = await _run(root, "src/cli.test.js")
    assert report.ok, report.output
    assert (report.passed, report.failed, report.errors) == (1, 0, 0)


async def test_test_id_target(js_project: ProjectFactory) -> None:
    root = js_project("js-jest")
    report = await _run(root, "src/calc.test.js::calc adds")
    assert report.ok, report.output
    assert report.passed == 1
    assert report.failed == 0


async def test_syntax_error_is_a_located_error(js_project: ProjectFactory) -> None:
    root = js_project("js-jest", "syntax-error")
    report = await _run(root, "src/broken.test.js", "src/more.test.js")
    assert (report.passed, report.failed, report.errors) == (1, 0, 1)
    failure = report.failures[0]
    assert failure.test_id == "src/broken.test.js"
    assert (failure.file, failure.line) == ("src/broken.test.js", 4)
    assert "SyntaxError" in failure.message
    assert "/" + "tmp" not in failure.message  # paths are relative to the run root


async def test_hang_times_out(js_project: ProjectFactory) -> None:
    root = js_project("js-jest", "hang")
    report = await _run(root, "src/hang.test.js", limit=3)
    assert report.timed_out
    assert not report.ok
    assert report.errors == 1
    assert "timed out after 3s" in report.failures[0].message
    assert report.duration < 10


async def test_megabytes_of_output(js_project: ProjectFactory) -> None:
    root = js_project("js-jest", "loud")
    report = await _run(root, "src/loud.test.js")
    assert (report.passed, report.failed) == (0, 1)
    assert len(report.output) < 30_000
    failure = report.failures[0]
    assert (failure.file, failure.line) == ("src/loud.test.js", 5)
    assert len(failure.output) < 5_000


async def test_missing_node_modules_gives_a_hint(tmp_path: Path) -> None:
    from tests.adapters.conftest import copy_fixture

    root = copy_fixture("js-jest", tmp_path / "p")
    report = await _run(root)
    assert not report.ok
    assert report.hint == f"node_modules is missing: run `npm install` in {root}"
    assert report.summary().endswith(f"; hint: {report.hint}")
    (root / "yarn.lock").write_text("")
    report = await _run(root)
    assert report.hint is not None
    assert "`yarn install --frozen-lockfile`" in report.hint


async def test_runs_in_a_shadow_copy(js_project: ProjectFactory, tmp_path: Path) -> None:
    root = js_project("js-jest")
    shadow = ShadowWorkspace(root, tmp_path / "shadow")
    fixed = (root / "src/calc.test.js").read_text().replace("toBe(5)", "toBe(4)")
    run_root = shadow.sync({"src/calc.test.js": fixed})
    report = await JestRunner().run(root, run_root, [], shell=PosixShell(), timeout=60)
    assert (report.passed, report.failed) == (3, 1), report.output
    assert report.failures[0].file == "src/calc.js"
    assert "toBe(5)" in (root / "src/calc.test.js").read_text()


async def test_extra_args_reach_jest(js_project: ProjectFactory) -> None:
    """`tests.args` (`detect_toolchain(root, extra_args)`): parsed with the script's options."""
    root = js_project("js-jest")
    adapter = detect_toolchain(root, ["--testNamePattern", "adds more"])
    assert isinstance(adapter, JestRunner)
    report = await adapter.run(root, root, [], shell=PosixShell(), timeout=60)
    assert report.ok, report.output
    assert (report.passed, report.failed, report.errors) == (1, 0, 0)  # the others did not run
