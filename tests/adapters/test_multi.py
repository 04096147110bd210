"""Several toolchains in one repository: detection, folder binding, composite runs, profiles."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from adapters import (
    CompositeAdapter,
    FolderAdapter,
    GoTestRunner,
    JestRunner,
    PosixShell,
    PytestRunner,
    Shell,
    TestFailure,
    TestReport,
    VitestRunner,
    describe_project,
    detect_toolchain,
    detect_toolchains,
    merge_reports,
)
from tests.adapters.conftest import ProjectFactory


class FakeAdapter:
    """Records its calls; reports one failure located in ``src/x.js`` of its run root."""

    def __init__(self, name: str, passed: int = 1, failed: int = 0) -> None:
        self.name = name
        self.passed = passed
        self.failed = failed
        self.calls: list[tuple[Path, Path, list[str]]] = []

    def detect(self, root: Path) -> bool:
        return True

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,
    ) -> TestReport:
        self.calls.append((project_root, run_root, list(targets)))
        failures = tuple(
            TestFailure("src/x.test.js::t", "src/x.js", 3, "boom", "") for _ in range(self.failed)
        )
        code = 1 if self.failed else (0 if self.passed else 5)
        return TestReport(
            self.name, (self.name,), self.passed, self.failed, 0, 0, 0.5, failures, code, False, ""
        )


def _package(root: Path, runner: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(json.dumps({"devDependencies": {runner: "1.0.0"}}))


def test_detects_root_and_subfolders(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    _package(tmp_path / "web", "vitest")
    (tmp_path / "backend").mkdir()
    (tmp_path / "backend/go.mod").write_text("module example.com/backend\n")
    _package(tmp_path / "node_modules/x", "jest")  # never a project
    (tmp_path / "docs").mkdir()
    adapters = detect_toolchains(tmp_path)
    assert [a.name for a in adapters] == ["pytest", "go test (backend/)", "vitest (web/)"]
    assert isinstance(adapters[0], PytestRunner)
    assert isinstance(adapters[1], FolderAdapter)
    assert isinstance(adapters[1].inner, GoTestRunner)
    composite = detect_toolchain(tmp_path)
    assert isinstance(composite, CompositeAdapter)
    profile = describe_project(tmp_path).splitlines()
    assert profile[0].startswith("Python project; tests: pytest (found pytest.ini)")
    assert profile[1].startswith("backend/: Go module example.com/backend; tests: go test")
    assert profile[2].startswith("web/: Node project (npm, no lockfile); tests: vitest")
    assert "node_modules/.bin/vitest: missing" in profile[2]


def test_subfolder_of_the_same_kind_is_covered_by_the_root(tmp_path: Path) -> None:
    _package(tmp_path, "jest")
    _package(tmp_path / "packages-a", "jest")
    (tmp_path / "svc").mkdir()
    (tmp_path / "svc/go.mod").write_text("module svc\n")
    (tmp_path / "go.mod").write_text("module root\n")
    names = [a.name for a in detect_toolchains(tmp_path)]
    assert names == ["jest", "go test", "go test (svc/)"]  # nested Go modules are separate


async def test_folder_adapter_maps_targets_and_paths(tmp_path: Path) -> None:
    (tmp_path / "web/src").mkdir(parents=True)
    (tmp_path / "web/src/x.test.js").write_text("")
    inner = FakeAdapter("vitest", failed=1)
    adapter = FolderAdapter(inner, "web")
    report = await adapter.run(
        tmp_path, tmp_path, ["web/src/x.test.js::t", "other.py"], shell=PosixShell(), timeout=5
    )
    assert inner.calls == [(tmp_path / "web", tmp_path / "web", ["src/x.test.js::t"])]
    assert report.runner == "vitest (web/)"
    (failure,) = report.failures
    assert (failure.test_id, failure.file) == ("web/src/x.test.js::t", "web/src/x.js")


async def test_composite_runs_owners_and_merges(tmp_path: Path) -> None:
    root, web = FakeAdapter("pytest", passed=3), FakeAdapter("vitest", passed=2, failed=1)
    composite = CompositeAdapter([root, FolderAdapter(web, "web")])
    report = await composite.run(tmp_path, tmp_path, [], shell=PosixShell(), timeout=5)
    assert (report.passed, report.failed) == (5, 1)
    assert report.exit_code == 1
    assert report.runner == "pytest + vitest (web/)"
    assert report.command == ("pytest", "&&", "vitest")
    assert report.failures[0].file == "web/src/x.js"
    assert "== pytest: 3 passed" in report.output
    targeted = await composite.run(
        tmp_path, tmp_path, ["tests/test_a.py::test_x"], shell=PosixShell(), timeout=5
    )
    assert (targeted.passed, len(web.calls)) == (3, 1)  # web/ owns no target: not run
    assert root.calls[-1][2] == ["tests/test_a.py::test_x"]


def test_merge_ignores_a_toolchain_without_tests() -> None:
    ok = TestReport("pytest", (), 2, 0, 0, 0, 1.0, (), 0, False, "")
    empty = TestReport("vitest", (), 0, 0, 0, 0, 1.0, (), 1, False, "No test files found")
    merged = merge_reports([ok, empty])
    assert merged.ok
    assert merged.exit_code == 0
    hinted = TestReport("go test", (), 0, 0, 1, 0, 0.0, (), None, False, "", hint="install go")
    assert merge_reports([ok, hinted]).hint == "install go"
    assert not merge_reports([]).ok


def test_merge_keeps_the_packages_replayed_from_a_cache() -> None:
    go = TestReport("go test", (), 3, 0, 0, 0, 1.0, (), 0, False, "", cached=("strs",))
    py = TestReport("pytest", (), 2, 0, 0, 0, 1.0, (), 0, False, "")
    merged = merge_reports([go, py])
    assert merged.cached == ("strs",)
    assert (merged.passed, merged.parts) == (5, (go, py))


def test_unknown_project_probe_report(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text("[package]\n")
    (tmp_path / "src").mkdir()
    assert detect_toolchain(tmp_path) is None
    profile = describe_project(tmp_path)
    assert profile.startswith("no test runner found (looked for ")
    assert "package.json with jest or vitest, go.mod" in profile
    assert "found: Cargo.toml, src/" in profile


def test_node_profile(tmp_path: Path) -> None:
    package = {"scripts": {"test": "vitest run"}, "workspaces": ["packages/*"]}
    (tmp_path / "package.json").write_text(json.dumps(package))
    (tmp_path / "pnpm-lock.yaml").write_text("")
    assert isinstance(detect_toolchain(tmp_path), VitestRunner)
    profile = describe_project(tmp_path)
    assert profile.startswith("Node project (pnpm, lockfile pnpm-lock.yaml, workspaces); tests: ")
    assert "vitest (found scripts.test: 'vitest run')" in profile
    (tmp_path / "jest.config.js").write_text("")
    (tmp_path / "package.json").write_text("{}")
    assert isinstance(detect_toolchain(tmp_path), JestRunner)
    assert "jest (found jest.config.js)" in describe_project(tmp_path)


async def test_composite_on_real_runners(
    tmp_path: Path, js_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the child pytest starts faster
    js_project("js-vitest", dest=tmp_path / "web")
    (tmp_path / "test_root.py").write_text("def test_root():\n    assert True\n")
    adapter = detect_toolchain(tmp_path)
    assert isinstance(adapter, CompositeAdapter)
    report = await adapter.run(
        tmp_path, tmp_path, ["web/src/more.test.js", "test_root.py"], shell=PosixShell(), timeout=60
    )
    assert report.ok, report.output
    assert (report.passed, report.failed) == (2, 0)
    full = await adapter.run(tmp_path, tmp_path, [], shell=PosixShell(), timeout=60)
    assert {f.file for f in full.failures} == {"web/src/calc.test.js", "web/src/calc.js"}
    assert full.failures[0].test_id.startswith("web/src/calc.test.js::")
    assert sys.executable in full.command
