"""Node's own test runner (`"test": "node --test"`), found and read like jest and vitest: before
it, such a project had "no test runner found" and `run` ended "unverified". `agent-lsp test`
as a user runs it (a subprocess, the sandboxed shadow copy) against `node --test` itself on
the same project: the same counts, the failing tests at their lines, a test file that cannot
load as an error at its line, a targeted run, the script's flags and test folder kept."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from adapters.node import node_project
from adapters.nodetest_runner import node_test_args
from tests.adapters.test_cli_runners import agent_lsp_test, counts, native

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

MATH = "exports.add = (a, b) => a - b;\nexports.neg = (a) => -a;\n"
TESTS = """\
const { test, describe } = require('node:test');
const assert = require('node:assert');
const { add, neg } = require('../lib/math');

describe('math', () => {
  test('adds', () => {
    assert.strictEqual(add(1, 2), 3);
  });
  test('negates', () => {
    assert.strictEqual(neg(2), -2);
  });
});

test('skipped', { skip: true }, () => {});
test('top level', () => {
  assert.ok(neg(0) === 0 || true);
});
"""
BROKEN = (
    "const { test } = require('node:test');\nrequire('./missing-module');\ntest('x', () => {});\n"
)


def project(tmp_path: Path, script: str) -> Path:
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    (root / "test").mkdir()
    (root / "lib" / "math.js").write_text(MATH)
    (root / "test" / "math.test.js").write_text(TESTS)
    (root / "test" / "broken.test.js").write_text(BROKEN)
    (root / "package.json").write_text(json.dumps({"name": "p", "scripts": {"test": script}}))
    return root


def test_node_test_counts_and_lines_match_node_s_own(tmp_path: Path) -> None:
    root = project(tmp_path, "node --no-warnings --test test/")
    own = native(["node", "--no-warnings", "--test", "test/"], root)
    totals = re.findall(r"^# (pass|fail|skipped) (\d+)$", own.stdout, re.MULTILINE)  # TAP
    said = {k: int(v) for k, v in totals}
    assert said == {"pass": 2, "fail": 2, "skipped": 1}, own.stdout  # the load error is a fail

    code, report = agent_lsp_test(root, tmp_path)

    assert code == 1
    assert report["runner"] == "node-test"
    # node counts the file that cannot load as a failed test; agent-lsp as an error of that file
    assert counts(report) == (said["pass"], said["fail"] - 1, 1)
    assert report["totals"]["skipped"] == said["skipped"]
    by_id = {t["id"]: t for t in report["tests"]}
    adds = by_id["test/math.test.js::math adds"]
    assert (adds["path"], adds["line"]) == ("test/math.test.js", 7)
    assert "-1 !== 3" in adds["message"]
    broken = by_id["test/broken.test.js"]
    assert (broken["path"], broken["line"]) == ("test/broken.test.js", 2)
    assert "Cannot find module './missing-module'" in broken["message"]
    assert "agent-lsp-shadow" not in json.dumps(report)


def test_a_targeted_run_runs_that_test_only(tmp_path: Path) -> None:
    root = project(tmp_path, "node --test")
    (root / "lib" / "math.js").write_text(MATH.replace("a - b", "a + b"))

    code, report = agent_lsp_test(root, tmp_path, "test/math.test.js::math adds")

    assert code == 0, report
    assert counts(report) == (1, 0, 0) and report["totals"]["skipped"] == 0


def test_what_the_script_says_is_kept() -> None:
    flags, paths = node_test_args(
        "tsc -p . && NODE_ENV=test node --import tsx --test --watch "
        "--test-reporter spec --test-concurrency=1 'test/**/*.test.ts'"
    )
    assert flags == ["--import", "tsx", "--test-concurrency=1"]
    assert paths == ["test/**/*.test.ts"]
    assert node_test_args("jest") == ([], [])


@pytest.mark.parametrize(
    ("script", "runner"),
    [
        ("node --test", "node-test"),
        ("node --experimental-strip-types --test test/", "node-test"),
        ("c8 node --test", "node-test"),
        ("node test.js", None),
        ("node --test && jest", "jest"),
        ("vitest run", "vitest"),
    ],
)
def test_the_runner_is_read_from_the_test_script(
    tmp_path: Path, script: str, runner: str | None
) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": script}}))
    found = node_project(tmp_path)
    assert found is not None and found.runner == runner


def test_a_tests_command_running_node_test_is_read_per_test() -> None:
    from adapters.command_runner import CommandRunner, command_adapter
    from adapters.nodetest_runner import NodeTestRunner

    adapter = command_adapter("node --test spec/")
    assert isinstance(adapter, NodeTestRunner) and adapter.script == "node --test spec/"
    assert isinstance(command_adapter("make test"), CommandRunner)
