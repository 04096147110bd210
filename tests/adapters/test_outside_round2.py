"""`agent-lsp test` as a user runs it on shapes of real projects tried from outside (second
round): each test is a small project of our own doing what a real one did, run by the real
runner natively and through `agent-lsp test --json` (the sandboxed shadow copy)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.conftest import ProjectFactory
from tests.adapters.test_cli_runners import agent_lsp_test, counts, native


@pytest.fixture
def in_tmp() -> Iterator[Path]:
    """A folder directly under /tmp (the sandbox gives its programs a /tmp of their own)."""
    folder = Path(tempfile.mkdtemp(prefix="agent-lsp-round2-", dir="/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _venv_with_pytest(folder: Path) -> Path:
    """A virtualenv at `folder` that imports pytest from agent-lsp's own environment (a `.pth`
    line), as a user's `python -m venv /tmp/venv && pip install pytest` would."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    [site] = list(folder.glob("lib/python*/site-packages"))
    (site / "outside.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return folder


def test_an_active_virtualenv_under_tmp_runs_the_tests(in_tmp: Path, tmp_path: Path) -> None:
    # a real project (pallets/markupsafe) in a clone, its virtualenv made with
    # `python -m venv /tmp/...` and activated: the sandbox's private /tmp hid it, and every
    # run was one error "bwrap: execvp /tmp/.../bin/python: No such file or directory".
    venv = _venv_with_pytest(in_tmp / "venv")
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    beside = in_tmp / "beside.txt"  # the rest of the host's /tmp stays hidden
    beside.write_text("not for the tests\n")
    (root / "tests" / "test_a.py").write_text(
        "import os\nimport sys\n\n\ndef test_prefix():\n"
        f"    assert sys.prefix == {str(venv)!r}\n"
        f"    assert not os.path.exists({str(beside)!r})\n\n\n"
        "def test_wrong():\n    assert 1 == 2\n"
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_LSP_", "PYTEST_"))}
    env |= {"HOME": str(home), "VIRTUAL_ENV": str(venv)}
    env["PATH"] = f"{venv}/bin{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "test", "--json", "--root", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["command"][0] == str(venv / "bin" / "python"), report
    assert counts(report) == (1, 1, 0), report
    [failure] = report["tests"]
    assert (failure["path"], failure["line"]) == ("tests/test_a.py", 11)


def test_a_vite_config_bundled_by_an_earlier_native_run(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    # a real project (unjs/pathe) with a vite.config.ts: a native `vitest run` bundles the
    # config into node_modules/.vite-temp and leaves that folder; the shadow shared it as the
    # user's (read-only in the sandbox), and every run was one error "EROFS: read-only file
    # system, open 'node_modules/.vite-temp/vite.config.ts.timestamp-....mjs'".
    root = js_project("js-vitest")
    (root / "vite.config.ts").write_text(
        'import { defineConfig } from "vitest/config";\n\n'
        "export default defineConfig({ test: { testTimeout: 10000 } });\n"
    )
    own = native(["npx", "vitest", "run"], root)
    assert "2 failed | 2 passed | 1 skipped" in own.stdout, own.stdout
    assert (root / "node_modules" / ".vite-temp").is_dir()
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (1, (2, 2, 0)), report
    assert {t["path"] for t in report["tests"]} == {"src/calc.test.js", "src/calc.js"}


_THRESHOLD = """\
module.exports = {
  collectCoverage: true,
  coverageThreshold: { global: { lines: 100 } },
};
"""


def test_coverage_on_in_a_jest_config_is_off_as_in_the_script(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    # a real project (vercel/ms): jest collects coverage with a 100% global threshold in its
    # config. agent-lsp drops `--coverage` from a test script but kept the config's: a run of
    # some of the tests cannot reach the threshold (natively jest passes them and exits 1),
    # and agent-lsp said "1 error: Ran all test suites within paths ..." for every run of an
    # affected selection.
    root = js_project("js-jest")
    (root / "jest.config.js").write_text(_THRESHOLD)
    own = native(["npx", "jest", "src/more.test.js"], root)
    assert own.returncode == 1 and "coverage threshold for lines (100%) not met" in own.stderr
    code, report = agent_lsp_test(root, tmp_path, "src/more.test.js")
    assert (code, counts(report)) == (0, (1, 0, 0)), report
    (root / "src" / "calc.test.js").unlink()
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (0, (1, 0, 0)), report


def test_coverage_on_in_a_vitest_config_is_off_as_in_the_script(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    # the same with vitest: `coverage.enabled` and a threshold in vitest.config.js
    root = js_project("js-vitest-coverage")
    own = native(["npx", "vitest", "run", "src/more.test.js"], root)
    assert own.returncode == 1 and "does not meet global threshold (100%)" in own.stderr, own
    code, report = agent_lsp_test(root, tmp_path, "src/more.test.js")
    assert (code, counts(report)) == (0, (1, 0, 0)), report
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (0, (3, 0, 0)), report


def test_a_jest_config_in_typescript_without_ts_node(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    # a real project (vercel/ms) keeps its jest config in jest.config.ts, which jest loads
    # with ts-node, not installed there: agent-lsp said only "Failed to parse the TypeScript
    # config file", jest's next line (ts-node is required) left out, and no next step.
    root = js_project("js-jest")
    (root / "jest.config.ts").write_text("export default { testEnvironment: 'node' };\n")
    own = native(["npx", "jest"], root)
    assert "'ts-node' is required" in own.stderr, own.stderr
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (1, (0, 0, 1)), report
    assert report["hint"] == (
        "ts-node is not installed: add it (`npm install --save-dev ts-node`) or run "
        f"`npm install` in {root} if another package should bring it"
    ), report


_DOCTESTED = '''\
def double(x):
    """Double it.

    >>> double(2)
    4
    >>> double(3)
    7
    """
    return 2 * x


def inv(x):
    """Invert.

    >>> inv(0)
    0
    """
    return 1 / x
'''


def test_a_failing_doctest_says_what_it_expected_and_got(tmp_path: Path) -> None:
    # a real project's shape (doctests of `src/` collected by `--doctest-modules` from a
    # setup.cfg [tool:pytest]): the failure was located, but its message was the first line
    # of pytest's listing of the docstring ("002 Double it."), not what went wrong.
    root = tmp_path / "project"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "setup.cfg").write_text(
        "[tool:pytest]\ntestpaths = src tests\naddopts = --doctest-modules\npythonpath = src\n"
    )
    (root / "src" / "pkg" / "__init__.py").write_text(_DOCTESTED)
    (root / "tests" / "test_d.py").write_text(
        "from pkg import double\n\n\ndef test_double():\n    assert double(10) == 20\n"
    )
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (1, (1, 2, 0)), report
    found = {t["id"]: (t["path"], t["line"], t["message"]) for t in report["tests"]}
    assert found == {
        "src/pkg/__init__.py::pkg.double": (
            "src/pkg/__init__.py",
            6,
            ">>> double(3): expected 7, got 6",
        ),
        "src/pkg/__init__.py::pkg.inv": (
            "src/pkg/__init__.py",
            15,
            ">>> inv(0): UNEXPECTED EXCEPTION: ZeroDivisionError('division by zero')",
        ),
    }, found


def _venv_with_pytest_cov(folder: Path) -> Path:
    """`_venv_with_pytest` plus pytest-cov and coverage, installed with pip into a folder of
    their own (skipped where the index cannot be reached)."""
    venv = _venv_with_pytest(folder / "venv")
    extra = venv / "cov"  # inside it: the sandbox shows the virtualenv back, nothing beside it
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(extra)]
    done = subprocess.run(
        [*pip, "pytest-cov", "coverage"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"pip could not install pytest-cov: {done.stderr[-500:]}")
    [site] = list(venv.glob("lib/python*/site-packages"))
    (site / "cov.pth").write_text(f"{extra}\n")
    return venv


def test_pytest_cov_with_a_threshold_in_addopts_fails_no_run_of_some_tests(
    tmp_path: Path,
) -> None:
    # the pytest shape of the same (a project with `--cov=pkg --cov-fail-under=100` in its
    # addopts): a run of one test file cannot reach the threshold, pytest passes it and exits
    # 1, and agent-lsp said "1 error: 1 passed in 0.06s".
    venv = _venv_with_pytest_cov(tmp_path / "env")
    python = str(venv / "bin" / "python")
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
        'addopts = ["--cov=pkg", "--cov-fail-under=100"]\n'
    )
    (root / "pkg" / "__init__.py").write_text(
        "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    )
    for name in "ab":
        (root / "tests" / f"test_{name}.py").write_text(
            f"from pkg import {name}\n\n\ndef test_{name}():\n    assert {name}()\n"
        )
    own = native([python, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_a.py"], root)
    assert own.returncode == 1 and "Required test coverage of 100% not reached" in own.stdout
    (root / ".venv").symlink_to(venv)
    code, report = agent_lsp_test(root, tmp_path, "tests/test_a.py")
    assert (code, counts(report)) == (0, (1, 0, 0)), report
    assert report["command"][0] == str(root / ".venv" / "bin" / "python")
    code, report = agent_lsp_test(root, tmp_path)
    assert (code, counts(report)) == (0, (2, 0, 0)), report
