"""Definition of done: targeted tests then the full suite, the fix's diagnostic re-checked by
its own source, the definition recorded in the task state and named by the outcome — the
real openai client against the scripted server, real pytest in a temp project."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from adapters import tests_for_source
from agent_lsp.loop.done import TARGETED_LIMIT, targeted_tests
from agent_lsp.messages import TaskStatus
from agent_lsp.task import DiagnosticInfo, Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages
from tests.test_agent import make_session

TEST_DIAGNOSTIC = DiagnosticInfo(
    message="tests/test_calc.py::test_average: assert 3.0 == 4",
    line=8,
    source="agent-lsp",
    severity="error",
)
FIX_TEST = Task(
    kind=TaskKind.FIX, instruction="", path="tests/test_calc.py", diagnostic=TEST_DIAGNOSTIC
)
SKIP = "def test_average() -> None:"
SKIPPED = "import pytest\n\n\n@pytest.mark.skip\ndef test_average() -> None:"


def edit(path: str, old: str, new: str) -> Reply:
    return Reply(
        tool_calls=[ToolCall("edit_file", {"path": path, "old_text": old, "new_text": new})]
    )


def log_events(log: Path, kind: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [row for row in rows if row.get("event") == kind or row.get("kind") == kind]


def with_other_tests(project: Path) -> None:
    (project / "tests" / "test_other.py").write_text(
        "def test_unrelated() -> None:\n    assert 1 + 1 == 2\n"
    )


async def test_affected_tests_run_first_then_the_full_suite(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    with_other_tests(project)
    fake_openai.script(edit("calc.py", BUG, FIX), Reply("Fixed average()."))
    session = make_session(project, fake_openai.base_url)
    task = Task(kind=TaskKind.TASK, instruction="fix average()")
    outcome = await session.run_task(task, RecordingChannel())
    log = session.log_path
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED and outcome.verified
    runs = [row["summary"] for row in log_events(log, "tests")]
    assert len(runs) == 2, runs
    assert runs[0].startswith("targeted tests/test_calc.py: 2 passed, 0 failed")
    assert runs[1].startswith("3 passed, 0 failed")  # the full suite, after
    assert outcome.checked.startswith(
        "verified: affected tests (tests/test_calc.py): 2 passed, 0 failed"
    )
    assert "; full suite: 3 passed, 0 failed" in outcome.checked


async def test_a_failing_affected_test_is_reported_without_the_full_run(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    with_other_tests(project)
    wrong = "    return sum(values) / (len(values) + 2)\n"
    fake_openai.script(
        edit("calc.py", BUG, wrong),
        Reply("Done."),
        edit("calc.py", wrong, FIX),
        Reply("Now it is fixed."),
    )
    session = make_session(project, fake_openai.base_url)
    task = Task(kind=TaskKind.TASK, instruction="fix average()")
    outcome = await session.run_task(task, RecordingChannel())
    log = session.log_path
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED
    sent = fake_openai.requests[2]["messages"][-1]["content"]
    assert sent.startswith(
        "The task is not done: the tests affected by your change (tests/test_calc.py) do "
        "not pass on the current text.\npytest: 1 passed, 1 failed"
    )
    assert "FAILED tests/test_calc.py::test_average" in sent
    runs = [row["summary"] for row in log_events(log, "tests")]
    assert [r.split(":")[0].split(" in ")[0] for r in runs] == [
        "targeted tests/test_calc.py",
        "targeted tests/test_calc.py",
        "3 passed, 0 failed, 0 errors, 0 skipped",
    ]


async def test_a_fixed_test_diagnostic_is_rechecked_and_named_in_the_outcome(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(edit("calc.py", BUG, FIX), Reply("Fixed."))
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TEST, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED and outcome.verified
    assert outcome.checked.endswith(
        "diagnostic 'tests/test_calc.py::test_average: assert 3.0 == 4' at "
        "tests/test_calc.py:9 gone (tests/test_calc.py::test_average passed)"
    )
    state = (project / ".agent-lsp" / "state" / "task" / "current-task.md").read_text()
    assert "### definition of done\n" in state
    assert (
        "- tests: the tests affected by each change first, then the full suite (pytest) "
        "passes on the editor's text\n"
        "- diagnostic 'tests/test_calc.py::test_average: assert 3.0 == 4' at "
        "tests/test_calc.py:9 is gone (re-run tests/test_calc.py::test_average)"
    ) in state


async def test_tests_pass_but_the_diagnostic_remains_is_not_completed(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The model skips the failing test: the suite passes, the test it was asked to fix
    still does not: told once, then the task fails, saying so."""
    test_file = project / "tests" / "test_calc.py"
    before = test_file.read_text()
    fake_openai.script(
        edit("tests/test_calc.py", SKIP, SKIPPED),
        Reply("Done: the test passes now."),
        Reply("It is done."),
    )
    session = make_session(project, fake_openai.base_url)
    channel = RecordingChannel({test_file: before})
    outcome = await session.run_task(FIX_TEST, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.FAILED and outcome.stop_reason == "diagnostic remains"
    assert outcome.summary.startswith(
        "not fixed: diagnostic 'tests/test_calc.py::test_average: assert 3.0 == 4' at "
        "tests/test_calc.py:9 still there (tests/test_calc.py::test_average: 0 passed, "
        "0 failed, 0 errors, 1 skipped"
    )
    assert outcome.summary.endswith("although the tests pass; the model says: It is done.")
    assert not outcome.checked.startswith("verified")
    told = fake_openai.requests[2]["messages"][-1]["content"]
    assert told.startswith(
        "The task is not done: The tests pass, but the problem you were asked to fix is still "
        "reported: diagnostic 'tests/test_calc.py::test_average: assert 3.0 == 4'"
    )
    assert len(fake_openai.requests) == 3
    assert test_file.read_text() == before  # the edit stayed in the buffer


async def test_a_diagnostic_nobody_can_ask_is_said_to_be_unchecked(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        edit("calc.py", BUG, FIX), Reply(tool_calls=[ToolCall("run_tests", {})]), Reply("Ok.")
    )
    task = Task(
        kind=TaskKind.FIX,
        instruction="",
        path="calc.py",
        diagnostic=DiagnosticInfo(message="average() is wrong", line=9, source="pylint"),
    )
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(task, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    # (The sample project has no virtualenv: the report's hint, if any, says which Python ran.)
    assert re.fullmatch(
        r"verified: full suite: 2 passed, 0 failed, 0 errors, 0 skipped in [\d.]+s"
        r"(; hint: no virtualenv found in .*)?"
        r"; diagnostic 'average\(\) is wrong' at calc\.py:10 could not be re-checked \(pylint "
        r"cannot be asked\)",
        outcome.checked,
    )
    assert tool_messages(fake_openai.requests[2])[1].count("2 passed") == 1


def _large_tree(root: Path) -> None:
    """A sympy-like tree: a `pytest.ini` whose `testpaths` leave `bin/` out, a core module
    imported by 150 test files at several depths, and `bin/test_*.py` scripts."""
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = pkg doc/src\n")
    (root / "pkg" / "core").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core" / "__init__.py").write_text("")
    (root / "pkg" / "core" / "basic.py").write_text("def one() -> int:\n    return 1\n")
    (root / "pkg" / "core" / "tests").mkdir()
    (root / "pkg" / "core" / "tests" / "test_basic.py").write_text(
        "from pkg.core.basic import one\n\n\ndef test_one() -> None:\n    assert one() == 1\n"
    )
    for area in range(15):
        for n in range(10):
            folder = root / "pkg" / f"area{area}" / "tests"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"test_a{n}.py").write_text("from pkg.core.basic import one\n")
    (root / "bin").mkdir()
    for n in range(6):
        (root / "bin" / f"test_script{n}.py").write_text("from pkg.core.basic import one\n")
    (root / "pkg" / "core" / "check_basic.py").write_text("from pkg.core.basic import one\n")


async def test_the_selection_follows_pytest_config_nearest_first_within_a_budget(
    tmp_path: Path,
) -> None:
    _large_tree(tmp_path)
    found = tests_for_source(tmp_path, "pkg/core/basic.py")
    assert len(found) == 151
    assert not [f for f in found if f.startswith("bin/") or "check_" in f]
    assert found[0] == "pkg/core/tests/test_basic.py"  # the nearest first
    selection = await targeted_tests(tmp_path, ["pkg/core/basic.py"])
    assert len(selection.files) == TARGETED_LIMIT
    assert selection.files[0] == "pkg/core/tests/test_basic.py"
    assert selection.left == 151 - TARGETED_LIMIT
    assert selection.shown().endswith(f"(+{151 - TARGETED_LIMIT} more left to the full suite)")


async def test_the_same_selection_on_the_same_text_is_not_run_again(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    with_other_tests(project)
    wrong = "    return sum(values) / (len(values) + 2)\n"
    fake_openai.script(
        edit("calc.py", BUG, wrong),
        Reply("Done."),
        edit("calc.py", wrong, "    return 0\n"),
        edit("calc.py", "    return 0\n", wrong),  # back to the text that failed
        Reply("It is done."),
        edit("calc.py", wrong, FIX),
        Reply("Now it is fixed."),
    )
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(
        Task(kind=TaskKind.TASK, instruction="fix"), RecordingChannel()
    )
    log = session.log_path
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED
    runs = [row["summary"] for row in log_events(log, "tests")]
    again = "(the same tests on the same text: not run again)"
    assert [r.split(":")[0] for r in runs] == ["targeted tests/test_calc.py"] * 3 + [
        "3 passed, 0 failed, 0 errors, 0 skipped in " + runs[3].split(" in ")[1].split(":")[0]
    ]
    assert not runs[0].endswith(again)
    assert runs[1].endswith(again) and runs[1].split(" in ")[0] == runs[0].split(" in ")[0]
    assert not runs[2].endswith(again)


def test_a_new_tests_command_takes_effect_without_a_restart(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    session = make_session(project, fake_openai.base_url)
    assert session.checker.adapter is not None
    assert session.checker.adapter.name == "pytest"
    changed = session.settings.model_copy(deep=True)
    changed.tests.command = "sh check.sh"
    session.update_settings(changed)
    assert session.checker.adapter is not None
    assert session.checker.adapter.name == "command"
    session.checker.close()
