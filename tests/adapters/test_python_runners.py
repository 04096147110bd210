"""UnittestRunner, DjangoRunner (on a stand-in manage.py), Python runner choice and hints."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters import (
    DjangoRunner,
    PosixShell,
    PytestRunner,
    TestReport,
    UnittestRunner,
    describe_project,
    detect_toolchain,
    python_env,
)
from adapters.django_runner import parse_unittest_text
from adapters.unittest_runner import dotted_targets

CALC = "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n"
UNITTEST_CASES = """\
    import unittest

    from calc import add, div


    class CalcTest(unittest.TestCase):
        def test_add(self):
            self.assertEqual(add(1, 2), 3)

        def test_add_wrongly(self):
            self.assertEqual(add(2, 2), 5)

        def test_div(self):
            self.assertEqual(div(1, 0), 0)

        @unittest.skip("later")
        def test_later(self):
            pass

        @unittest.expectedFailure
        def test_known_bug(self):
            self.assertEqual(add(0, 0), 1)

        def test_cases(self):
            for n in (1, 2):
                with self.subTest(n=n):
                    self.assertEqual(add(n, 0), 1)
    """
UT_FILE = "import unittest\n\n\nclass T(unittest.TestCase):\n    pass\n"
# Stands in for Django's manage.py: its test runner prints unittest's text report.
FAKE_MANAGE = """\
    import sys
    import unittest

    if __name__ == "__main__":
        assert sys.argv[1:3] == ["test", "--noinput"], sys.argv
        labels = sys.argv[3:]
        print("Creating test database for alias 'default'...", file=sys.stderr)
        argv = ["manage.py", *labels] if labels else ["manage.py", "discover", "-p", "test*.py"]
        unittest.main(module=None, argv=argv)
    """


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


async def _run(runner: UnittestRunner | DjangoRunner, root: Path, *targets: str) -> TestReport:
    return await runner.run(root, root, targets, shell=PosixShell(), timeout=60)


async def test_unittest_suite(tmp_path: Path) -> None:
    root = _write(
        tmp_path, {"calc.py": CALC, "tests/__init__.py": "", "tests/test_calc.py": UNITTEST_CASES}
    )
    assert isinstance(detect_toolchain(root), UnittestRunner)
    report = await _run(UnittestRunner(), root)
    assert (report.passed, report.failed, report.errors, report.skipped) == (1, 2, 1, 2)
    by_id = {f.test_id: f for f in report.failures}
    wrong = by_id["tests/test_calc.py::CalcTest::test_add_wrongly"]
    assert (wrong.file, wrong.line) == ("tests/test_calc.py", 11)
    assert wrong.message == "AssertionError: 4 != 5"
    div = by_id["tests/test_calc.py::CalcTest::test_div"]
    assert (div.file, div.line) == ("calc.py", 6)
    assert "tests/test_calc.py::CalcTest::test_cases (n=2)" in by_id
    only = await _run(UnittestRunner(), root, "tests/test_calc.py::CalcTest::test_add")
    assert only.ok, only.output
    assert only.passed == 1


async def test_unittest_without_packages_and_import_errors(tmp_path: Path) -> None:
    bad = "import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        x = (\n"
    ok = "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
    root = _write(tmp_path, {"tests/test_bad.py": bad, "tests/test_ok.py": ok})
    report = await _run(UnittestRunner(), root)
    assert (report.passed, report.errors) == (1, 1)
    failure = report.failures[0]
    assert failure.file == "tests/test_bad.py"
    assert failure.line is not None
    assert "SyntaxError" in failure.message
    empty = await _run(UnittestRunner(), _write(tmp_path / "empty", {"x.py": ""}))
    assert empty.exit_code == 5
    assert "no tests collected" in empty.summary()


async def test_django_runner_parses_the_text_report(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "manage.py": FAKE_MANAGE,
            "calc.py": CALC,
            "app/__init__.py": "",
            "app/tests.py": UNITTEST_CASES,
        },
    )
    assert isinstance(detect_toolchain(root), DjangoRunner)
    report = await _run(DjangoRunner(), root)
    assert (report.passed, report.failed, report.errors, report.skipped) == (1, 2, 1, 2)
    by_id = {f.test_id: f for f in report.failures}
    wrong = by_id["app/tests.py::CalcTest::test_add_wrongly"]
    assert (wrong.file, wrong.line, wrong.message) == ("app/tests.py", 11, "AssertionError: 4 != 5")
    assert by_id["app/tests.py::CalcTest::test_div"].file == "calc.py"
    only = await _run(DjangoRunner(), root, "app/tests.py::CalcTest::test_add")
    assert only.command[-1] == "app.tests.CalcTest.test_add"
    assert only.ok, only.output


async def test_django_not_installed_hint(tmp_path: Path) -> None:
    manage = "import django_is_not_here as django\n"
    root = _write(tmp_path, {"manage.py": manage.replace("django_is_not_here as django", "django")})
    report = await _run(DjangoRunner(python=sys.executable), root)
    assert not report.ok
    assert report.hint == (
        f"django is not installed in {sys.executable}: run `{sys.executable} -m pip install django`"
    )


def test_parse_unittest_text_of_older_pythons(tmp_path: Path) -> None:
    _write(tmp_path, {"app/tests.py": "x = 1\n"})
    text = textwrap.dedent(
        f"""\
        ======================================================================
        ERROR: test_x (app.tests.T)
        ----------------------------------------------------------------------
        Traceback (most recent call last):
          File "{tmp_path}/app/tests.py", line 1, in test_x
        NameError: name 'y' is not defined

        ----------------------------------------------------------------------
        Ran 3 tests in 0.001s

        FAILED (errors=1, skipped=1)
        """
    )
    counts, failures = parse_unittest_text(text, tmp_path)
    assert counts == {"passed": 1, "failed": 0, "errors": 1, "skipped": 1}
    (failure,) = failures
    assert failure.test_id == "app/tests.py::T::test_x"
    assert (failure.file, failure.line) == ("app/tests.py", 1)
    assert failure.message == "NameError: name 'y' is not defined"


def test_dotted_targets() -> None:
    assert dotted_targets(["tests/test_a.py::T::test_x", "pkg/__init__.py", "a.b.C"]) == [
        "tests.test_a.T.test_x",
        "pkg",
        "a.b.C",
    ]


@pytest.mark.parametrize(
    ("files", "runner", "reason"),
    [
        ({"tests/test_a.py": UT_FILE}, UnittestRunner, "pytest not declared"),
        (
            {"tests/test_a.py": UT_FILE, "requirements-dev.txt": "pytest>=8\n"},
            PytestRunner,
            "pytest declared in requirements-dev.txt",
        ),
        (
            {"manage.py": "", "pytest.ini": "[pytest]\nDJANGO_SETTINGS_MODULE = s\n"},
            PytestRunner,
            "pytest-django",
        ),
        ({"manage.py": ""}, DjangoRunner, "manage.py"),
        (
            {"tests/test_a.py": "from unittest import mock\n\ndef test_a():\n    pass\n"},
            PytestRunner,
            "test files such as tests/test_a.py",
        ),
        ({"conftest.py": "", "tests/test_a.py": UT_FILE}, PytestRunner, "conftest.py"),
    ],
)
def test_python_runner_choice(
    tmp_path: Path, files: dict[str, str], runner: type, reason: str
) -> None:
    root = _write(tmp_path, files)
    assert isinstance(detect_toolchain(root), runner)
    assert reason in describe_project(root)


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


async def test_pytest_missing_in_the_project_venv(tmp_path: Path) -> None:
    root = _write(tmp_path / "p", {"test_a.py": "def test_a():\n    pass\n"})
    python = str(_venv(root / ".venv") / "bin/python")
    assert "virtualenv: .venv (in use)" in describe_project(root)
    report = await PytestRunner().run(root, root, [], shell=PosixShell(), timeout=60)
    assert not report.ok
    assert (
        report.hint == f"pytest is not installed in {python}: run `{python} -m pip install pytest`"
    )
    assert f"hint: {report.hint}" in report.summary()


def test_virtualenv_present_but_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _write(tmp_path / "p", {"test_a.py": ""})
    (root / ".venv").mkdir()
    (root / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    other = _write(tmp_path / "other", {"bin/python": ""})
    monkeypatch.setenv("VIRTUAL_ENV", str(other))
    env = python_env(root)
    assert env.python == str(other / "bin/python")
    assert "present but not used" in env.describe()
    assert env.hint() is not None
    assert "virtualenv .venv/ is not used" in env.hint()


def test_manager_without_in_project_venv(tmp_path: Path) -> None:
    root = _write(tmp_path, {"uv.lock": "", "test_a.py": ""})
    env = python_env(root)
    assert env.manager == "uv"
    assert env.python == sys.executable
    assert "`uv sync`" in (env.hint() or "")
    assert "uv: `uv sync`" in describe_project(root)
