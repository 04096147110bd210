"""`agent-lsp test --json`: one JSON object on stdout with the real totals of a real run, the
same exit codes as the text report, and a JSON error (never a traceback) for bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.adapters.conftest import copy_fixture
from tests.conftest import BUG, FIX
from tests.test_cli import agent_lsp


def run_json(*args: str, env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    done = agent_lsp("test", "--json", *args, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def test_json_report_of_a_real_run(project: Path, server_env: dict[str, str]) -> None:
    code, report, _ = run_json("--root", str(project), env=server_env)
    assert code == 1
    assert report["ok"] is False
    assert report["exit_code"] == 1
    assert report["totals"] == {"passed": 1, "failed": 1, "errors": 0, "skipped": 0, "total": 2}
    assert report["runner"] == "pytest"
    assert report["folder"] == ""
    assert any(part.endswith("pytest") or part == "pytest" for part in report["command"])
    assert isinstance(report["duration"], float) and report["duration"] > 0
    (test,) = report["tests"]
    assert test["id"] == "tests/test_calc.py::test_average"
    assert test["status"] == "failed"
    assert (test["path"], test["line"]) == ("tests/test_calc.py", 9)
    assert test["message"].startswith("assert 3.0 == 4")
    assert report["packages"] == []

    calc = project / "calc.py"
    calc.write_text(calc.read_text().replace(BUG, FIX))
    code, report, _ = run_json("--root", str(project), "tests/test_calc.py", env=server_env)
    assert (code, report["ok"], report["exit_code"]) == (0, True, 0)
    assert report["totals"]["passed"] == 2
    assert report["tests"] == []


def test_json_parts_of_a_monorepo(tmp_path: Path, server_env: dict[str, str]) -> None:
    root = copy_fixture("py-multi", tmp_path / "py")
    code, report, _ = run_json("--root", str(root), env=server_env)
    assert code == 1
    assert report["totals"] == {"passed": 3, "failed": 1, "errors": 0, "skipped": 0, "total": 4}
    packages = {p["folder"]: p for p in report["packages"]}
    assert sorted(packages) == ["services/auth", "services/billing"]
    assert packages["services/auth"]["totals"]["passed"] == 2
    assert packages["services/auth"]["ok"] is True
    assert packages["services/billing"]["totals"]["failed"] == 1
    (test,) = report["tests"]
    assert test["id"] == "services/billing/tests/test_invoice.py::test_quantities"
    assert test["path"] == "services/billing/tests/test_invoice.py"
    assert packages["services/billing"]["tests"] == [test]


def test_unknown_targets_are_a_json_error(project: Path, server_env: dict[str, str]) -> None:
    code, report, _ = run_json("--root", str(project), "tests/test_nope.py", env=server_env)
    assert code == 2
    assert report["ok"] is False
    assert report["exit_code"] == 2
    assert report["error"]["kind"] == "unknown_target"
    assert "tests/test_nope.py: no such file or folder" in report["error"]["message"]
    outside = project.parent / "elsewhere.py"
    outside.write_text("")
    code, report, _ = run_json("--root", str(project), str(outside), env=server_env)
    assert (code, report["error"]["kind"]) == (2, "unknown_target")
    assert "outside the project" in report["error"]["message"]


def test_no_runner_is_a_json_error(tmp_path: Path, server_env: dict[str, str]) -> None:
    (tmp_path / "notes.txt").write_text("nothing to test\n")
    code, report, _ = run_json("--root", str(tmp_path), env=server_env)
    assert code == 2
    assert report["error"]["kind"] == "no_runner"
    assert report["error"]["message"].startswith("no test runner found")


def test_text_mode_unknown_target(project: Path, server_env: dict[str, str]) -> None:
    done = agent_lsp("test", "--root", str(project), "tests/test_nope.py", env=server_env)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("agent-lsp test: tests/test_nope.py: no such file or folder")
    assert "Traceback" not in done.stderr
    helped = agent_lsp("test", "--help", env=server_env)
    assert "exit codes: 0 all tests passed; 1 failures" in " ".join(helped.stdout.split())
