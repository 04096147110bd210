"""`agent-lsp test` as a user runs it (a subprocess, the sandboxed shadow copy), against the
project's own runner on the same temp project: the same counts, the same lines, real paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import ProjectFactory


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_LSP_", "PYTEST_"))}
    return env | {"HOME": str(home)}


def agent_lsp_test(root: Path, tmp_path: Path, *targets: str) -> tuple[int, dict[str, Any]]:
    """Exit code and JSON report of `agent-lsp test --json` in ``root``."""
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "test", "--json", "--root", str(root), *targets],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout + done.stderr
    return done.returncode, json.loads(lines[-1])


def counts(report: dict[str, Any]) -> tuple[int, int, int]:
    totals = report["totals"]
    return totals["passed"], totals["failed"], totals["errors"]


def native(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "CI": "1", "NO_COLOR": "1", "FORCE_COLOR": "0"},
    )


def test_jest_circular_values_keep_their_results(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    # 21 tests in two files, one failing assertion on objects with a circular reference: jest
    # 29's worker pool cannot send that file's results back ("Converting circular structure to
    # JSON") and lost the whole file; jest, left to choose, runs in band and reports it.
    root = js_project("js-jest29")
    own = native(["npx", "jest"], root)
    assert "Tests:       1 failed, 20 passed, 21 total" in own.stderr, own.stderr
    code, report = agent_lsp_test(root, tmp_path)
    assert code == 1
    assert counts(report) == (20, 1, 0), report
    [failure] = report["tests"]
    assert failure["id"] == "src/b.test.js::circular"
    assert (failure["path"], failure["line"]) == ("src/b.test.js", 7)
    assert "toEqual" in failure["message"]


def test_npm_workspace_runs_the_hoisted_runners(js_project: ProjectFactory, tmp_path: Path) -> None:
    # `npm install` at the root of a workspace hoists vitest and jest to the root's
    # node_modules; packages/tools has no package.json between the package and the root.
    root = js_project("js-npm-workspace")
    vitest = native(["npm", "test"], root / "packages" / "a")
    assert "Tests  5 passed (5)" in vitest.stdout, vitest.stdout + vitest.stderr
    jest = native(["npm", "test"], root / "packages" / "tools" / "x")
    assert "Tests:       4 passed, 4 total" in jest.stderr, jest.stdout + jest.stderr
    code, report = agent_lsp_test(root, tmp_path)
    assert code == 0, report
    assert counts(report) == (9, 0, 0)
    parts = {p["folder"]: counts(p) for p in report["packages"]}
    assert parts == {"packages/a": (5, 0, 0), "packages/tools/x": (4, 0, 0)}


def test_a_missing_install_names_the_project_never_the_copy(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    root = js_project("js-npm-workspace")
    for entry in (root / "node_modules").iterdir():
        entry.unlink()
    code, report = agent_lsp_test(root, tmp_path)
    assert code == 1
    assert counts(report) == (0, 0, 2)
    assert report["hint"] == (
        f"vitest is not installed in node_modules: run `npm install` in {root}; "
        f"jest is not installed in node_modules: run `npm install` in {root}"
    )
    assert "agent-lsp-shadow" not in json.dumps(report)


def test_go_failures_without_a_position_name_the_test_and_real_paths(
    go_project: ProjectFactory, tmp_path: Path
) -> None:
    root = go_project()
    (root / "strs" / "exit_test.go").write_text(
        'package strs\n\nimport (\n\t"os"\n\t"testing"\n)\n\n'
        "func TestExits(t *testing.T) {\n\tos.Exit(3)\n}\n"
    )
    (root / "gor_test.go").write_text(
        'package calc\n\nimport "testing"\n\nfunc TestGoroutinePanic(t *testing.T) {\n'
        "\tdone := make(chan bool)\n\tgo func() {\n\t\tvar m map[string]int\n"
        '\t\tm["x"] = 1\n\t\tdone <- true\n\t}()\n\t<-done\n}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "test", "--root", str(root)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "agent-lsp-shadow" not in done.stdout
    assert " at ?" not in done.stdout
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert (
        "FAILED strs::TestExits: TestExits failed (no message and no position: did it call "
        "os.Exit or end the test binary?) [package example.com/fixture/strs]"
    ) in failed
    assert (
        "FAILED .::TestGoroutinePanic at gor_test.go:9: panic: assignment to entry in nil map"
        in failed
    )
    assert f"\t{root}/gor_test.go:9 +0x" in done.stdout  # the stack names the project's file


def test_vitest_typecheck_runs_in_the_sandbox(js_project: ProjectFactory, tmp_path: Path) -> None:
    # `vitest run --typecheck`: vitest has tsc keep its build info in vitest's own dist
    # folder, the user's node_modules, read-only in the sandbox (EROFS, a false red).
    root = js_project("js-vitest-ts")
    own = native(["npx", "vitest", "run", "--typecheck"], root)
    assert own.returncode == 0 and "Tests  5 passed (5)" in own.stdout, own.stdout
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (0, (5, 0, 0)), report
    types = root / "src" / "math.test-d.ts"
    types.write_text(
        types.read_text().replace("returns.toEqualTypeOf<number>", "returns.toEqualTypeOf<string>")
    )
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (1, (4, 1, 0)), report
    [failure] = report["tests"]
    assert failure["path"] == "src/math.test-d.ts"
    assert "does not satisfy the constraint" in failure["message"]


def _wrapper_project(js_project: ProjectFactory, fixture: str = "js-jest") -> Path:
    """js-jest whose test script runs jest through a wrapper package's bin (as
    `"test": "kcd-scripts test"` does): `my-scripts`, which depends on jest."""
    root = js_project(fixture)
    package = json.loads((root / "package.json").read_text())
    package["scripts"]["test"] = "my-scripts test"
    package["devDependencies"] = {"my-scripts": "1.0.0"}
    (root / "package.json").write_text(json.dumps(package))
    wrapper = root / "node_modules" / "my-scripts"
    wrapper.mkdir()
    (wrapper / "package.json").write_text(
        json.dumps(
            {"name": "my-scripts", "version": "1.0.0", "bin": {"my-scripts": "bin.js"}}
            | {"dependencies": {"jest": "30.2.0"}}
        )
    )
    (wrapper / "bin.js").write_text(
        "#!/usr/bin/env node\n"
        "const { spawnSync } = require('child_process');\n"
        "const jest = require.resolve('jest/bin/jest');\n"
        "const args = process.argv.slice(3);\n"
        "const done = spawnSync(process.execPath, [jest, ...args], { stdio: 'inherit' });\n"
        "process.exit(done.status);\n"
    )
    (wrapper / "bin.js").chmod(0o755)
    shared = (root / "node_modules" / ".bin").resolve()
    (root / "node_modules" / ".bin").unlink()
    bins = root / "node_modules" / ".bin"
    bins.mkdir()
    for entry in shared.iterdir():
        (bins / entry.name).symlink_to(entry)
    (bins / "my-scripts").symlink_to("../my-scripts/bin.js")
    return root


def test_jest_behind_a_wrapper_script_is_found(js_project: ProjectFactory, tmp_path: Path) -> None:
    root = _wrapper_project(js_project)
    own = native(["npm", "test"], root)
    assert "Tests:       2 failed, 1 skipped, 2 passed, 5 total" in own.stderr, own.stderr
    code, report = agent_lsp_test(root, tmp_path)
    assert code == 1, report
    assert report["runner"] == "jest"
    assert counts(report) == (2, 2, 0)
    assert {(t["path"], t["line"]) for t in report["tests"]} == {
        ("src/calc.test.js", 9),
        ("src/calc.js", 7),
    }
    # the repository's own `tests.command` (untrusted: it runs in the sandbox, as scripts.test
    # would) naming jest is read like scripts.test: its options kept, results per test
    (root / ".agent-lsp").mkdir()
    (root / ".agent-lsp" / "config.toml").write_text('[tests]\ncommand = "jest -t divides"\n')
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (1, (0, 1, 0)), report
    assert report["tests"][0]["id"] == "src/calc.test.js::calc divides by zero"


@pytest.mark.parametrize("fixture", ["js-jest", "js-jest29"])
def test_a_wrapper_s_own_jest_config_and_variables_are_used(
    js_project: ProjectFactory, tmp_path: Path, fixture: str
) -> None:
    # kcd-scripts (match-sorter, jest 29) runs `node scripts/test.js` in a child process,
    # which sets variables (BABEL_ENV) and calls jest.run(["--config", <its config as JSON>]):
    # the tests only run with that config (its transform, setup files, test match)
    root = _wrapper_project(js_project, fixture)
    wrapper = root / "node_modules" / "my-scripts"
    (wrapper / "bin.js").write_text(
        "#!/usr/bin/env node\n"
        "const { spawnSync } = require('child_process');\n"
        "const script = require.resolve('./scripts/test.js');\n"
        "const args = process.argv.slice(3);\n"
        "const done = spawnSync(process.execPath, [script, ...args], { stdio: 'inherit' });\n"
        "process.exit(done.status);\n"
    )
    (wrapper / "scripts").mkdir()
    (wrapper / "scripts" / "test.js").write_text(
        "process.env.MY_SCRIPTS_ENV = 'test';\n"
        "const isCI = Boolean(process.env.CI);\n"
        "const config = { rootDir: process.cwd(), testMatch: ['**/checks/**/*.check.js'],\n"
        "  setupFiles: [require.resolve('../setup.js')] };\n"
        "const watch = isCI ? [] : ['--watch'];\n"
        "require('jest').run(['--config', JSON.stringify(config), ...watch,"
        " ...process.argv.slice(2)]);\n"
    )
    (wrapper / "setup.js").write_text("globalThis.fromWrapper = 'yes';\n")
    (root / "checks").mkdir()
    (root / "checks" / "a.check.js").write_text(
        "test('sees the setup file', () => {\n"
        "  expect(globalThis.fromWrapper).toBe('yes');\n"
        "});\n"
        "test('sees the variable', () => {\n"
        "  expect(process.env.MY_SCRIPTS_ENV).toBe('test');\n"
        "});\n"
        "test('fails here', () => {\n"
        "  expect(1 + 1).toBe(3);\n"
        "});\n"
    )
    own = native(["npm", "test"], root)
    assert "Tests:       1 failed, 2 passed, 3 total" in own.stderr, own.stderr
    code, report = agent_lsp_test(root, tmp_path)
    assert report["runner"] == "jest", report
    assert (code, counts(report)) == (1, (2, 1, 0)), report
    [failure] = report["tests"]
    assert (failure["path"], failure["line"]) == ("checks/a.check.js", 8), failure
    # a target is run by the wrapper's config too
    code, report = agent_lsp_test(root, tmp_path, "checks/a.check.js::sees the variable")
    assert (code, counts(report)) == (0, (1, 0, 0)), report


def test_tests_command_runs_what_detection_cannot_find(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "check.sh").write_text(
        "test \"$(cat VERSION)\" = 2 || { echo 'VERSION is not 2'; exit 3; }\n"
    )
    (root / "VERSION").write_text("1\n")
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "test", "--root", str(root)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2  # nothing detected
    config = tmp_path / "home" / ".config" / "agent-lsp" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[tests]\ncommand = "sh check.sh"\n')
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (1, (0, 1, 0)), report
    assert report["tests"][0]["message"] == "`sh check.sh` exited with 3: VERSION is not 2"
    (root / "VERSION").write_text("2\n")
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (0, (1, 0, 0)), report
