"""The jest/vitest JSON parser on canned reports (no Node needed)."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.jsreport import build_js_report
from adapters.node import js_regex_escape, name_pattern, node_project, split_targets
from adapters.results import CommandResult


def _result(code: int | None, output: str = "", timed_out: bool = False) -> CommandResult:
    return CommandResult(("vitest",), code, output, timed_out, False, 0, 1.0)


def test_missing_package_is_located_at_its_import(tmp_path: Path) -> None:
    test_file = tmp_path / "src/a.test.ts"
    test_file.parent.mkdir()
    test_file.write_text('import { test } from "vitest";\nimport { check } from "recheck";\n')
    data = {
        "testResults": [
            {
                "name": str(test_file),
                "status": "failed",
                "message": f"Cannot find package 'recheck' imported from '{test_file}'",
                "assertionResults": [],
            }
        ]
    }
    report_file = tmp_path / "r.json"
    report_file.write_text(json.dumps(data))
    report = build_js_report("vitest", _result(1), report_file, tmp_path, 60)
    (failure,) = report.failures
    assert (failure.test_id, failure.file, failure.line) == ("src/a.test.ts", "src/a.test.ts", 2)
    assert failure.message == "Cannot find package 'recheck' imported from 'src/a.test.ts'"
    assert report.errors == 1


def test_no_json_is_a_console_failure(tmp_path: Path) -> None:
    (tmp_path / "vitest.config.ts").write_text("x\n")
    output = f"Error: bad config\n    at {tmp_path}/vitest.config.ts:1:1\n"
    report = build_js_report("vitest", _result(1, output), tmp_path / "none.json", tmp_path, 60)
    (failure,) = report.failures
    assert (failure.file, failure.line, failure.message) == (
        "vitest.config.ts",
        1,
        "Error: bad config",
    )
    timed = build_js_report("jest", _result(None, "", True), tmp_path / "none.json", tmp_path, 9)
    assert timed.failures[0].message == "jest timed out after 9s"
    assert timed.timed_out


def test_run_failing_with_all_tests_passed(tmp_path: Path) -> None:
    data = {
        "testResults": [
            {
                "name": str(tmp_path / "a.test.js"),
                "status": "passed",
                "assertionResults": [{"title": "t", "status": "passed"}],
            }
        ]
    }
    report_file = tmp_path / "r.json"
    report_file.write_text(json.dumps(data))
    report = build_js_report(
        "vitest", _result(1, "Unhandled Rejection: boom"), report_file, tmp_path, 60
    )
    assert (report.passed, report.errors) == (1, 1)
    assert not report.ok


def test_targets_and_patterns() -> None:
    assert split_targets(["a.test.js::x y", "a.test.js::z", "b.test.js"]) == (
        ["a.test.js", "b.test.js"],
        ["x y", "z"],
    )
    assert js_regex_escape("a (b) [c].d/e") == r"a \(b\) \[c\]\.d\/e"
    assert name_pattern(["calc adds", "x+y"]) == r"^(?:calc adds|x\+y)$"
    assert name_pattern([]) is None


def test_package_manager_and_workspace_lockfiles(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(
        '{"workspaces": ["web"], "packageManager": "pnpm@9.0.0"}'
    )
    (tmp_path / "web").mkdir()
    (tmp_path / "web/package.json").write_text('{"devDependencies": {"jest": "30"}}')
    (tmp_path / "yarn.lock").write_text("")
    web = node_project(tmp_path / "web")
    assert web is not None
    assert (web.manager, web.lockfile, web.runner) == ("yarn", tmp_path / "yarn.lock", "jest")
    root = node_project(tmp_path)
    assert root is not None
    assert (root.manager, root.install_command, root.workspaces) == ("pnpm", "pnpm install", True)


def test_jest_lines_of_a_killed_run_keep_the_finished_files(tmp_path: Path) -> None:
    finished = {
        "name": str(tmp_path / "a.test.js"),
        "status": "passed",
        "message": "",
        "assertionResults": [{"title": "t", "status": "passed", "failureMessages": []}],
    }
    report_file = tmp_path / "jest.jsonl"
    report_file.write_text(json.dumps(finished) + '\n{"name": "/b.test.js", "stat')
    report = build_js_report("jest", _result(None, "", True), report_file, tmp_path, 5)
    assert (report.passed, report.failed, report.errors) == (1, 0, 1)
    assert report.failures[0].message == "jest timed out after 5s"
