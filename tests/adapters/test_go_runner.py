"""GoTestRunner on tests/fixtures/go-mod, plus the -json stream parser on canned events."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from adapters import GoTestRunner, PosixShell, TestReport, detect_toolchain
from adapters.go_parse import build_go_report
from adapters.go_runner import go_env, go_hint, go_targets
from adapters.results import CommandResult
from tests.adapters.conftest import ProjectFactory


async def _run(root: Path, *targets: str, limit: float = 60) -> TestReport:
    runner = GoTestRunner(race=False)  # -race compiles a race runtime first: slow on CI
    return await runner.run(root, root, targets, shell=PosixShell(), timeout=limit)


async def test_full_suite(go_project: ProjectFactory) -> None:
    root = go_project()
    assert isinstance(detect_toolchain(root), GoTestRunner)
    before = (root / "go.mod").read_bytes()
    report = await _run(root)
    # leaves: TestAdd, TestAddWrongly, TestDiv/exact, TestDiv/by_zero, TestDiv/later, TestShout
    assert (report.passed, report.failed, report.errors, report.skipped) == (4, 1, 0, 1)
    assert report.exit_code == 1
    (failure,) = report.failures
    assert failure.test_id == ".::TestAddWrongly"
    assert (failure.file, failure.line) == ("calc_test.go", 13)
    assert failure.message == "Add(2, 2) = 4, want 5"
    assert "-json" in report.command
    assert (root / "go.mod").read_bytes() == before  # GOFLAGS=-mod=mod was dropped
    assert "--- FAIL: TestAddWrongly" in report.output  # human text, not JSON


async def test_targets(go_project: ProjectFactory) -> None:
    root = go_project()
    only = await _run(root, "strs/strs_test.go")
    assert only.ok, only.output
    assert (only.passed, only.failed) == (1, 0)
    named = await _run(root, ".::TestDiv/exact")
    assert named.ok, named.output
    assert named.passed == 1
    both = await _run(root, ".::TestAdd", "strs::TestShout")
    assert both.ok, both.output
    assert both.passed == 2


async def test_compile_errors_are_located(go_project: ProjectFactory) -> None:
    root = go_project("compile-error", "test-compile-error")
    report = await _run(root)
    assert not report.ok
    assert report.passed == 0
    assert report.errors == 2
    by_id = {f.test_id: f for f in report.failures}
    calc, strs = by_id["."], by_id["strs"]
    assert (calc.file, calc.line) == ("calc.go", 6)
    assert "undefined: c" in calc.message
    assert (strs.file, strs.line) == ("strs/broken_test.go", 6)
    assert "string" in strs.message


async def test_panic_is_located(go_project: ProjectFactory) -> None:
    root = go_project("panic")
    report = await _run(root, ".::TestPanic")
    assert report.failed == 1
    failure = report.failures[0]
    assert (failure.file, failure.line) == ("panic_test.go", 7)
    assert failure.message.startswith("panic: assignment to entry in nil map")


async def test_hang_names_the_test(go_project: ProjectFactory) -> None:
    root = go_project("hang")
    report = await _run(root, ".::TestHang", limit=6)  # go's -timeout fires at 3.4s
    assert report.timed_out
    assert not report.ok
    assert report.failed == 1
    assert report.failures[0].test_id == ".::TestHang"
    assert "timed out" in report.failures[0].message
    assert report.duration < 6


async def test_megabytes_of_output(go_project: ProjectFactory) -> None:
    root = go_project("loud")
    report = await _run(root)
    assert (report.passed, report.failed, report.skipped) == (4, 2, 1)  # all events kept
    assert len(report.output) < 30_000
    loud = next(f for f in report.failures if f.test_id == ".::TestLoud")
    assert (loud.file, loud.line, loud.message) == ("loud_test.go", 14, "too loud")
    assert len(loud.output) < 5_000


async def test_go_missing_gives_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "go.mod").write_text("module x\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    report = await _run(tmp_path)
    assert report.hint is not None
    assert report.hint.startswith("go is not on PATH")


def _go_env_values(*names: str) -> list[str]:
    return subprocess.run(
        ["go", "env", *names], capture_output=True, text=True, check=True, env=go_env()
    ).stdout.split()


async def test_race_detection_follows_go_env(go_cache: Path, tmp_path: Path) -> None:
    del go_cache
    cgo, cc = _go_env_values("CGO_ENABLED", "CC")
    expected = cgo == "1" and shutil.which(cc) is not None
    runner = GoTestRunner()
    env = go_env()
    assert await runner.race_supported(PosixShell(), tmp_path, env) == expected
    env["CGO_ENABLED"] = "0"
    assert not await runner.race_supported(PosixShell(), tmp_path, env)


def test_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    monkeypatch.delenv("GOPROXY", raising=False)
    env = go_env()
    assert "GOFLAGS" not in env
    assert env["GOPROXY"] == "off"
    monkeypatch.setenv("GOPROXY", "https://proxy.example")
    assert go_env()["GOPROXY"] == "https://proxy.example"


def test_go_targets() -> None:
    assert go_targets([]) == (["./..."], None)
    assert go_targets(["pkg/a_test.go", "pkg", "./other/..."]) == (["./pkg", "./other/..."], None)
    assert go_targets(["a_test.go"]) == (["."], None)
    assert go_targets([".::TestA", "sub::TestB/case"]) == ([".", "./sub"], "^(?:TestA|TestB)$")
    assert go_targets(["sub::TestB/case"]) == (["./sub"], "^TestB$/^case$")


def _event(action: str, package: str, test: str | None = None, output: str = "") -> str:
    data: dict[str, object] = {"Action": action, "Package": package}
    if test:
        data["Test"] = test
    if output:
        data["Output"] = output
    return json.dumps(data)


def test_parser_handles_new_build_events(tmp_path: Path) -> None:
    # Go 1.24+ puts build errors into the stream as build-output events.
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/x.go").write_text("package sub\n")
    lines = [
        json.dumps(
            {
                "ImportPath": "m/sub [m/sub.test]",
                "Action": "build-output",
                "Output": "# m/sub [m/sub.test]\n",
            }
        ),
        json.dumps(
            {
                "ImportPath": "m/sub [m/sub.test]",
                "Action": "build-output",
                "Output": "sub/x.go:1:9: expected declaration\n",
            }
        ),
        json.dumps({"Action": "fail", "Package": "m/sub", "FailedBuild": "m/sub [m/sub.test]"}),
        _event("run", "m", "TestOk"),
        _event("pass", "m", "TestOk"),
        _event("run", "m", "TestGone"),
        _event("output", "m", "TestGone", "panic: boom\n"),
        _event("fail", "m"),
    ]
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(lines) + "\n")
    result = CommandResult(("go", "test"), 1, "", False, False, 0, 0.1)
    report = build_go_report(result, events, tmp_path, "m", 60)
    assert (report.passed, report.failed, report.errors) == (1, 1, 1)
    by_id = {f.test_id: f for f in report.failures}
    assert (by_id["sub"].file, by_id["sub"].line) == ("sub/x.go", 1)
    assert by_id[".::TestGone"].message == "panic: boom"


def test_parser_without_events_reads_the_console(tmp_path: Path) -> None:
    output = "go: go.mod requires go >= 1.99 (running go 1.19; GOTOOLCHAIN=local)\n"
    result = CommandResult(("go", "test"), 1, output, False, False, 0, 0.1)
    report = build_go_report(result, None, tmp_path, None, 60)
    assert report.errors == 1
    assert "requires go >= 1.99" in report.failures[0].message
    assert "install that Go version" in (go_hint(output, tmp_path) or "")


async def test_extra_args_reach_go_test(go_project: ProjectFactory) -> None:
    """`tests.args` (`detect_toolchain(root, extra_args)`): after go test's own flags."""
    root = go_project()
    adapter = detect_toolchain(root, ["-run", "^TestShout$"])
    assert isinstance(adapter, GoTestRunner)
    adapter._race = False  # pyright: ignore[reportPrivateUsage]
    report = await adapter.run(root, root, [], shell=PosixShell(), timeout=60)
    assert report.ok, report.output
    assert (report.passed, report.failed) == (1, 0)  # TestAddWrongly did not run
    assert "-run ^TestShout$" in " ".join(report.command)
