"""PytestRunner on tiny projects built in tmp_path, plus detection and describe_project."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from adapters import PosixShell, PytestRunner, TestReport, describe_project, detect_toolchain

CALC = """\
def add(a, b):
    return a + b


def div(a, b):
    return a / b
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    # The runner must drop these; a bogus option would make the child pytest fail.
    monkeypatch.setenv("PYTEST_ADDOPTS", "--not-a-real-option")
    # Keeps the child pytest fast: the venv's plugins are irrelevant to these toy projects.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


async def _run(root: Path, *targets: str, limit: float = 60) -> TestReport:
    return await PytestRunner().run(root, root, targets, shell=PosixShell(), timeout=limit)


async def test_passing_project_and_targets(tmp_path: Path) -> None:
    test = "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\n"
    test += "def test_more():\n    assert add(2, 2) == 4\n"
    root = _write(tmp_path, {"calc.py": CALC, "tests/test_calc.py": test})
    report = await _run(root)
    assert report.ok, report.output
    assert (report.passed, report.failed, report.errors, report.skipped) == (2, 0, 0, 0)
    assert report.summary().startswith("2 passed, 0 failed, 0 errors, 0 skipped in ")
    assert report.runner == "pytest"
    assert report.command[0] == sys.executable
    assert report.failures == ()
    assert not list(root.rglob("__pycache__"))
    assert not (root / ".pytest_cache").exists()
    only = await _run(root, "tests/test_calc.py::test_add")
    assert (only.passed, only.failed) == (1, 0)


async def test_failures_are_located(tmp_path: Path) -> None:
    test = """\
        import pytest
        from calc import add, div


        def test_add():
            assert add(1, 2) == 4


        def test_div():
            assert div(1, 0) == 0


        def test_ok():
            assert add(1, 1) == 2


        @pytest.mark.skip(reason="later")
        def test_skipped():
            pass


        class TestMore:
            def test_method(self):
                assert "a" == "b"
        """
    root = _write(tmp_path, {"calc.py": CALC, "tests/test_calc.py": test})
    report = await _run(root)
    assert not report.ok
    assert report.exit_code == 1
    assert (report.passed, report.failed, report.errors, report.skipped) == (1, 3, 0, 1)
    by_id = {f.test_id: f for f in report.failures}
    assert set(by_id) == {
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_div",
        "tests/test_calc.py::TestMore::test_method",
    }
    add = by_id["tests/test_calc.py::test_add"]
    assert (add.file, add.line) == ("tests/test_calc.py", 6)
    assert add.message == "assert 3 == 4"
    assert "AssertionError" in add.output
    div = by_id["tests/test_calc.py::test_div"]
    assert (div.file, div.line) == ("calc.py", 6)
    assert div.message == "ZeroDivisionError: division by zero"
    method = by_id["tests/test_calc.py::TestMore::test_method"]
    assert (method.file, method.line) == ("tests/test_calc.py", 24)
    assert report.summary().startswith("1 passed, 3 failed, 0 errors, 1 skipped in ")


async def test_collection_error(tmp_path: Path) -> None:
    bad = "def test_ok():\n    pass\n\ndef broken(:\n    pass\n"
    root = _write(tmp_path, {"tests/test_bad.py": bad})
    report = await _run(root)
    assert not report.ok
    assert report.errors >= 1
    failure = report.failures[0]
    assert failure.test_id == "tests/test_bad.py"
    assert (failure.file, failure.line) == ("tests/test_bad.py", 4)
    assert "SyntaxError" in failure.message


async def test_hanging_test_times_out(tmp_path: Path) -> None:
    test = "import time\n\ndef test_hang():\n    time.sleep(60)\n"
    root = _write(tmp_path, {"tests/test_hang.py": test})
    report = await _run(root, limit=3)
    assert report.timed_out
    assert report.exit_code is None
    assert not report.ok
    assert report.errors == 1
    assert "timed out" in report.failures[0].message
    assert "(timed out); hint: no virtualenv found in" in report.summary()
    assert report.duration < 10


async def test_huge_output_is_capped(tmp_path: Path) -> None:
    test = "def test_loud():\n    print('x' * 5_000_000)\n    assert False, 'boom'\n"
    root = _write(tmp_path, {"test_loud.py": test})
    report = await _run(root)
    assert (report.passed, report.failed) == (0, 1)
    assert len(report.output) < 30_000
    failure = report.failures[0]
    assert len(failure.output) < 4_200
    assert failure.message == "AssertionError: boom"
    assert (failure.file, failure.line) == ("test_loud.py", 3)


async def test_no_tests_is_not_ok(tmp_path: Path) -> None:
    root = _write(tmp_path, {"pytest.ini": "[pytest]\n", "tests/helper.py": "X = 1\n"})
    report = await _run(root)
    assert report.exit_code == 5
    assert not report.ok
    assert report.passed == 0
    assert "no tests collected" in report.summary()


async def test_interpreter_that_cannot_start(tmp_path: Path) -> None:
    root = _write(tmp_path, {"test_a.py": "def test_a():\n    pass\n"})
    runner = PytestRunner(python=str(tmp_path / "missing-python"))
    report = await runner.run(root, root, [], shell=PosixShell(), timeout=10)
    assert not report.ok
    assert report.errors == 1
    assert len(report.failures) == 1


def test_interpreter_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert PytestRunner(python="/x/python").interpreter(tmp_path) == "/x/python"
    assert PytestRunner().interpreter(tmp_path) == sys.executable
    venv_python = _write(tmp_path, {"venv/bin/python": ""}) / "venv/bin/python"
    assert PytestRunner().interpreter(tmp_path) == str(venv_python)
    dot_venv = _write(tmp_path, {".venv/bin/python": ""}) / ".venv/bin/python"
    assert PytestRunner().interpreter(tmp_path) == str(dot_venv)
    active = _write(tmp_path / "active", {"bin/python": ""})
    monkeypatch.setenv("VIRTUAL_ENV", str(active))
    assert PytestRunner().interpreter(tmp_path) == str(active / "bin/python")


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"pytest.ini": "[pytest]\n"}, "pytest.ini"),
        ({"tox.ini": "[tox]\n[pytest]\naddopts = -q\n"}, "tox.ini [pytest]"),
        ({"setup.cfg": "[metadata]\n[tool:pytest]\n"}, "setup.cfg [tool:pytest]"),
        (
            {"pyproject.toml": "[tool.pytest.ini_options]\nminversion = '8'\n"},
            "pyproject.toml [tool.pytest.ini_options]",
        ),
        ({"pyproject.toml": "[tool.pytest]\nminversion = '9'\n"}, "pyproject.toml [tool.pytest]"),
        ({"conftest.py": ""}, "conftest.py"),
        ({"test_thing.py": ""}, "test_thing.py"),
        ({"thing_test.py": ""}, "thing_test.py"),
        ({"tests/unit/test_deep.py": ""}, "tests/unit/test_deep.py"),
    ],
)
def test_detect_positive(tmp_path: Path, files: dict[str, str], reason: str) -> None:
    root = _write(tmp_path, files)
    assert PytestRunner().detect(root)
    assert reason in (PytestRunner().detect_reason(root) or "")
    assert isinstance(detect_toolchain(root), PytestRunner)
    profile = describe_project(root)
    assert profile.startswith("Python project; tests: pytest (found ")
    assert reason in profile
    assert f"interpreter: {sys.executable}" in profile


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"tox.ini": "[tox]\nenvlist = py311\n"},
        {"setup.cfg": "[metadata]\nname = x\n"},
        {"pyproject.toml": "[tool.ruff]\nline-length = 100\n"},
        {"pyproject.toml": "this is [not toml"},
        {"src/test_hidden.py": "", "tests/data.txt": "", "testing.py": ""},
    ],
)
def test_detect_negative(tmp_path: Path, files: dict[str, str]) -> None:
    root = _write(tmp_path, files)
    assert not PytestRunner().detect(root)
    assert detect_toolchain(root) is None
    profile = describe_project(root)
    assert "no test runner found" in profile
    assert "pytest.ini" in profile
    assert "test_*.py" in profile
