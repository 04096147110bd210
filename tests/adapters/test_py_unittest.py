"""UnittestRunner on a project shaped like Python-Markdown's: tox.ini says `discover -s tests
-t .`, tests share an assertion helper in the package, one test has failing subtests."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters import DjangoRunner, PosixShell, TestReport, UnittestRunner
from tests.adapters.conftest import copy_fixture
from tests.adapters.test_python_runners import FAKE_MANAGE

INLINE = "tests/unit/test_inline.py"
EMPHASIS_DIFF = (
    "AssertionError: '<p>some *emphasis* here</p>' != '<p>some <em>emphasis</em> here</p>'\n"
    "- <p>some *emphasis* here</p>\n"
    "?         ^        ^\n"
    "+ <p>some <em>emphasis</em> here</p>\n"
    "?         ^^^^        ^^^^^"
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_fixture("py-unittest-tox", tmp_path / "md")


async def _run(root: Path, *targets: str) -> TestReport:
    return await UnittestRunner(sys.executable).run(
        root, root, targets, shell=PosixShell(), timeout=120
    )


def _unittest_totals(root: Path, *args: str) -> tuple[int, int]:
    """(tests run, failures) as `python -m unittest` itself prints them."""
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    ran = re.search(r"^Ran (\d+) tests?", proc.stderr, re.MULTILINE)
    failures = re.search(r"failures=(\d+)", proc.stderr)
    assert ran is not None, proc.stderr
    return int(ran.group(1)), int(failures.group(1)) if failures else 0


@pytest.mark.parametrize("config", ["tox.ini", "setup.cfg"])
async def test_full_run_discovers_the_declared_test_root(project: Path, config: str) -> None:
    if config == "setup.cfg":  # tox's configuration inside setup.cfg
        text = (project / "tox.ini").read_text().replace("[tox]", "[tox:tox]")
        (project / "setup.cfg").write_text(text)
        (project / "tox.ini").unlink()
    report = await _run(project)
    ran, failures = _unittest_totals(project, "discover", "-s", "tests", "-t", ".")
    assert (ran, failures) == (6, 4)
    # test_manual.py at the top is outside the suite; each failing subtest counts
    assert (report.passed, report.failed, report.errors, report.skipped) == (3, failures, 0, 0)
    assert sorted(f.test_id for f in report.failures) == [
        "tests/test_misc.py::TestMisc::test_no_markup_in_words (word='**b**')",
        "tests/test_misc.py::TestMisc::test_no_markup_in_words (word='**d**')",
        "tests/unit/test_block.py::TestBlock::test_strong_lines",
        "tests/unit/test_inline.py::TestInline::test_emphasis",
    ]


async def test_failure_message_is_the_assertion_and_its_diff(project: Path) -> None:
    report = await _run(project, INLINE)
    (failure,) = report.failures
    assert failure.test_id == "tests/unit/test_inline.py::TestInline::test_emphasis"
    assert failure.message == EMPHASIS_DIFF
    assert "mdlite/test_tools.py" in failure.output  # the whole traceback stays available


async def test_failures_are_located_at_the_tests_own_line_not_the_helper(project: Path) -> None:
    report = await _run(project, INLINE, "tests/unit/test_block.py")
    where = {f.test_id: (f.file, f.line) for f in report.failures}
    assert where == {
        "tests/unit/test_block.py::TestBlock::test_strong_lines": ("tests/unit/test_block.py", 9),
        "tests/unit/test_inline.py::TestInline::test_emphasis": (INLINE, 9),
    }


async def test_folder_and_file_targets_run_exactly_the_tests_under_them(project: Path) -> None:
    folder = await _run(project, "tests/unit")
    assert _unittest_totals(project, "discover", "-s", "tests/unit", "-t", ".") == (5, 2)
    assert (folder.passed, folder.failed, folder.errors, folder.skipped) == (3, 2, 0, 0)
    file = await _run(project, INLINE)
    assert (file.passed, file.failed, file.errors) == (2, 1, 0)
    one = await _run(project, f"{INLINE}::TestInline::test_plain")
    assert one.ok, one.output
    assert (one.passed, one.failed) == (1, 0)
    both = await _run(project, "tests/unit/test_block.py", "tests/test_misc.py")
    assert (both.passed, both.failed) == (1, 3)
    top = await _run(project, "tests")
    assert (top.passed, top.failed) == (3, 4)
    klass = await _run(project, f"{INLINE}::TestInline")
    assert (klass.passed, klass.failed) == (2, 1)


async def test_subtests_count_once_each_like_unittest(project: Path) -> None:
    report = await _run(project, "tests/test_misc.py")
    assert _unittest_totals(project, "tests.test_misc") == (1, 2)
    assert (report.passed, report.failed) == (0, 2)
    lines = {f.line for f in report.failures}
    assert lines == {10}


async def test_django_text_report_gives_the_same_message_and_line(project: Path) -> None:
    (project / "manage.py").write_text(textwrap.dedent(FAKE_MANAGE))
    report = await DjangoRunner(sys.executable).run(
        project, project, [INLINE, "tests/unit/test_block.py"], shell=PosixShell(), timeout=120
    )
    assert (report.passed, report.failed, report.errors) == (3, 2, 0)
    by_id = {f.test_id: f for f in report.failures}
    emphasis = by_id["tests/unit/test_inline.py::TestInline::test_emphasis"]
    assert (emphasis.file, emphasis.line, emphasis.message) == (INLINE, 9, EMPHASIS_DIFF)
    block = by_id["tests/unit/test_block.py::TestBlock::test_strong_lines"]
    assert (block.file, block.line) == ("tests/unit/test_block.py", 9)
