"""PytestRunner on a project whose tests share an assertion helper and use subtests (unittest
``subTest`` and pytest's ``subtests`` fixture), compared with pytest's own totals."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from adapters import PosixShell, PytestRunner, TestReport
from adapters.pytest_runner import _subtest_labels  # pyright: ignore[reportPrivateUsage]
from tests.adapters.conftest import copy_fixture


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_fixture("py-pytest-helpers", tmp_path / "slugs")


async def _run(root: Path, *targets: str) -> TestReport:
    return await PytestRunner(sys.executable).run(
        root, root, targets, shell=PosixShell(), timeout=120
    )


def _pytest_totals(root: Path, *targets: str) -> dict[str, int]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    last = proc.stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (failed|passed)\b", last)}


async def test_assertion_in_a_shared_helper_is_located_at_the_test(project: Path) -> None:
    report = await _run(project, "tests/test_slugs.py")
    assert _pytest_totals(project, "tests/test_slugs.py") == {"failed": 2, "passed": 2}
    assert (report.passed, report.failed, report.errors) == (2, 2, 0)
    located = {(f.test_id, f.file, f.line, f.message) for f in report.failures}
    assert located == {
        (
            "tests/test_slugs.py::test_punctuation",
            "tests/test_slugs.py",
            9,
            "AssertionError: slugify('Hello, World!')",
        ),
        (
            "tests/test_slugs.py::test_quotes",
            "tests/test_slugs.py",
            17,
            'AssertionError: slugify("it\'s")',
        ),
    }
    assert all("tests/helpers.py:8: AssertionError" in f.output for f in report.failures)


async def test_each_failing_subtest_counts(project: Path) -> None:
    report = await _run(project, "tests/test_subtests.py")
    # pytest prints `5 failed, 1 passed`: its count adds test_fixture's own "contains 2 failed
    # subtests" and counts TestTable::test_table as passed although two of its subtests failed
    assert _pytest_totals(project, "tests/test_subtests.py") == {"failed": 5, "passed": 1}
    assert (report.passed, report.failed, report.errors) == (0, 4, 0)
    assert sorted((f.test_id, f.line) for f in report.failures) == [
        ("tests/test_subtests.py::TestTable::test_table (text='a.b')", 10),
        ("tests/test_subtests.py::TestTable::test_table (text='a?')", 10),
        ("tests/test_subtests.py::test_fixture (text='x!')", 16),
        ("tests/test_subtests.py::test_fixture (text='y;')", 16),
    ]


async def test_whole_suite_totals(project: Path) -> None:
    report = await _run(project)
    assert _pytest_totals(project) == {"failed": 7, "passed": 3}
    assert (report.passed, report.failed, report.errors, report.skipped) == (2, 6, 0, 0)


def test_subtest_labels_of_pytest_and_of_the_pytest_subtests_plugin() -> None:
    # pytest 9's short summary, then pytest-subtests 0.15's (under pytest 8), as they print them
    output = (
        "SUBFAILED(text='a.b') tests/test_subtests.py::TestTable::test_table - Assertio...\n"
        'FAILED tests/test_slugs.py::test_quotes - AssertionError: slugify("it\'s")\n'
        "(text='x!') SUBFAIL tests/test_subtests.py::test_fixture - AssertionError: as...\n"
        "[msg] (n=2) SUBFAIL tests/test_subtests.py::test_fixture\n"
    )
    assert _subtest_labels(output) == {
        "tests/test_subtests.py::TestTable::test_table": ["(text='a.b')"],
        "tests/test_subtests.py::test_fixture": ["(text='x!')", "[msg] (n=2)"],
    }
