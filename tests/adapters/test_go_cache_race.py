"""GoTestRunner: results replayed from go's test cache are marked, and `-race` is used only
when the project's Makefile or CI asks for it."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from adapters import GoTestRunner, PosixShell, TestReport
from adapters.go_runner import go_env, race_requested
from tests.adapters.conftest import ProjectFactory


@pytest.fixture
def fresh_cache(go_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A GOCACHE of this test alone, so its first run is never a cached one."""
    del go_cache
    cache = tmp_path / "gocache"
    monkeypatch.setenv("GOCACHE", str(cache))
    return cache


def _go_test(root: Path) -> str:
    argv = ["go", "test", "./..."]
    return subprocess.run(
        argv, cwd=root, capture_output=True, text=True, env=go_env(), check=False
    ).stdout


async def _run(root: Path, runner: GoTestRunner | None = None) -> TestReport:
    runner = runner or GoTestRunner()
    return await runner.run(root, root, [], shell=PosixShell(), timeout=300)


async def test_second_run_marks_the_cached_package(
    go_project: ProjectFactory, fresh_cache: Path
) -> None:
    del fresh_cache
    root = go_project()
    first = await _run(root)
    assert (first.passed, first.failed, first.skipped) == (4, 1, 1)
    assert first.cached == ()
    assert "cached" not in first.summary()
    second = await _run(root)
    # go re-runs the failing root package; strs passed, so go replays it from its cache
    await asyncio.to_thread(_go_test, root)
    direct = await asyncio.to_thread(_go_test, root)  # go's own second run, for comparison
    assert "ok  \texample.com/fixture/strs\t(cached)" in direct
    assert (second.passed, second.failed, second.skipped) == (4, 1, 1)
    assert second.cached == ("strs",)
    assert "(cached: strs; results replayed from the test cache, not re-run)" in second.summary()


async def test_no_race_unless_the_project_asks(
    go_project: ProjectFactory, fresh_cache: Path
) -> None:
    del fresh_cache
    root = go_project()
    assert race_requested(root) is None
    report = await _run(root)
    assert "-race" not in report.command
    assert (report.passed, report.failed) == (4, 1)


async def test_race_when_the_makefile_runs_tests_with_it(
    go_project: ProjectFactory, go_cache: Path, tmp_path: Path
) -> None:
    del go_cache
    root = go_project()
    (root / "Makefile").write_text("GO ?= go\n\ntest:\n\t$(GO) test -v -race ./...\n")
    assert race_requested(root) == "Makefile"
    runner = GoTestRunner()
    if not await runner.race_supported(PosixShell(), tmp_path, go_env()):
        pytest.skip("-race needs cgo and a C compiler")
    report = await _run(root, runner)
    assert "-race" in report.command
    assert (report.passed, report.failed) == (4, 1)


def test_race_requested_in_ci(tmp_path: Path) -> None:
    workflow = tmp_path / ".github/workflows/ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("jobs:\n  test:\n    steps:\n      - run: go build -race ./...\n")
    assert race_requested(tmp_path) is None  # a race build, not the tests
    workflow.write_text("jobs:\n  test:\n    steps:\n      - run: go test -race ./...\n")
    assert race_requested(tmp_path) == ".github/workflows/ci.yml"
