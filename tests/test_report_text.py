"""The test failures as the model reads them: the frames of the project's own code, never a
dozen of jest's or node's own, which pushed the Expected/Received lines out of the excerpt (seen
in the benchmark: a jest failure's excerpt was all jest-circus frames)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from adapters.results import TestFailure, TestReport
from agent_lsp.loop.verify import format_report, source_lines
from agent_lsp.project.workspace import Workspace
from tests.fakes.channel import RecordingChannel

CIRCUS = "/home/u/app/node_modules/jest-circus/build/jestAdapterInit.js"
JEST_OUTPUT = f"""Error: expect(received).toBe(expected) // Object.is equality

Expected: 15
Received: 10
    at Object.toBe (/home/u/app/cart.test.js:8:42)
    at Promise.finally.completed ({CIRCUS}:1557:28)
    at new Promise (<anonymous>)
    at callAsyncCircusFn ({CIRCUS}:1497:10)
    at _callCircusTest ({CIRCUS}:1007:40)
    at _runTest ({CIRCUS}:947:3)
    at {CIRCUS}:849:7
    at _runTestsForDescribeBlock ({CIRCUS}:862:11)
    at run ({CIRCUS}:761:3)
    at runAndTransformResultsToJestFormat ({CIRCUS}:1918:21)
    at jestAdapter (/home/u/app/node_modules/jest-circus/build/runner.js:101:19)
    at runTestInternal (/home/u/app/node_modules/jest-runner/build/index.js:275:16)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)
"""


def report(output: str) -> TestReport:
    failure = TestFailure(
        test_id="cart.test.js::shipping under 50",
        file="cart.test.js",
        line=8,
        message="Error: expect(received).toBe(expected) Expected: 15 Received: 10",
        output=output,
    )
    return TestReport(
        runner="jest",
        command=("jest",),
        passed=2,
        failed=1,
        errors=0,
        skipped=0,
        duration=0.7,
        failures=(failure,),
        exit_code=1,
        timed_out=False,
        output="",
    )


def test_a_jest_failure_keeps_its_own_frame_and_leaves_out_jests() -> None:
    text = format_report(report(JEST_OUTPUT), tail=12)
    assert text.splitlines()[1:] == [
        "FAILED cart.test.js::shipping under 50 at cart.test.js:8: "
        "Error: expect(received).toBe(expected) Expected: 15 Received: 10",
        "    Error: expect(received).toBe(expected) // Object.is equality",
        "        at Object.toBe (/home/u/app/cart.test.js:8:42)",
        "    [12 stack frames in dependencies left out]",
    ]


def test_lines_the_message_already_says_are_not_said_twice() -> None:
    """jest's Expected and Received lines are in the FAILED line's message: the excerpt under
    it keeps only what the message does not say (a small model was sent both, ~10% of its
    first request)."""
    text = format_report(report(JEST_OUTPUT), tail=12)
    assert text.count("Expected: 15") == text.count("Received: 10") == 1
    assert "\n    \n" not in text  # no blank line left where they were


def test_the_same_failure_again_is_named_not_shown_again() -> None:
    """Three tests failing with one error at one line (a stub that raises): its output is
    shown once, the others name the test and say so."""
    stub = "def clamp(v, lo, hi):\n>       raise NotImplementedError\nE       NotImplementedError"
    failures = tuple(
        TestFailure(
            test_id=f"test_numbers.py::{name}",
            file="numbers_util.py",
            line=8,
            message="NotImplementedError",
            output=f"value = {n}\n{stub}",
        )
        for n, name in enumerate(("test_inside", "test_below", "test_bad_range"))
    )
    text = format_report(replace(report(""), failed=3, failures=failures), tail=12)
    assert text.splitlines()[1:] == [
        "FAILED test_numbers.py::test_inside at numbers_util.py:8: NotImplementedError",
        "    value = 0",
        "    def clamp(v, lo, hi):",
        "    >       raise NotImplementedError",
        "    E       NotImplementedError",
        "FAILED test_numbers.py::test_below at numbers_util.py:8: NotImplementedError",
        "    (the same failure as above)",
        "FAILED test_numbers.py::test_bad_range at numbers_util.py:8: NotImplementedError",
        "    (the same failure as above)",
    ]


def test_frames_of_the_projects_own_code_all_stay() -> None:
    own = (
        "Error: boom\n"
        "    at total (/home/u/app/cart.js:9:11)\n"
        "    at Object.<anonymous> (/home/u/app/cart.test.js:4:10)\n"
    )
    text = format_report(report(own))
    assert "at total (/home/u/app/cart.js:9:11)" in text
    assert "at Object.<anonymous> (/home/u/app/cart.test.js:4:10)" in text
    assert "left out" not in text


UNITTEST_OUTPUT = """Traceback (most recent call last):
  File "/usr/lib/python3.11/unittest/case.py", line 57, in testPartExecutor
    yield
  File "/usr/lib/python3.11/unittest/case.py", line 579, in _callTestMethod
    if method() is not None:
       ^^^^^^^^
  File "/home/u/app/.venv/lib/python3.11/site-packages/plugin/wrap.py", line 9, in call
    return f()
  File "/home/u/app/test_stack.py", line 16, in test_peek_empty
    Stack().peek()
    ^^^^^^^^^^^^
AttributeError: 'Stack' object has no attribute 'peek'
"""


def test_a_python_traceback_keeps_the_projects_frames_and_leaves_out_the_stdlibs() -> None:
    """unittest's own case.py frames (seen in the benchmark: two of them, with their source
    and ^^^ lines, before every unittest failure's own line) and an installed package's."""
    text = format_report(report(UNITTEST_OUTPUT), tail=12)
    assert text.splitlines()[2:] == [
        "    Traceback (most recent call last):",
        '      File "/home/u/app/test_stack.py", line 16, in test_peek_empty',
        "        Stack().peek()",
        "        ^^^^^^^^^^^^",
        "    AttributeError: 'Stack' object has no attribute 'peek'",
        "    [3 stack frames in dependencies left out]",
    ]


CART_TEST = (
    'const { total } = require("./cart");\n\n'
    'test("free shipping from 50", () => {\n'
    "  expect(total([{ price: 50, qty: 1 }])).toBe(50);\n"
    "});\n"
)


def test_the_failing_line_is_shown_where_the_output_does_not_show_it(tmp_path: Path) -> None:
    """jest says `Expected: 50 Received: 55` and where, not with what input: the failing line
    as the editor holds it follows the FAILED line (a small model sent only the numbers wrote
    the same wrong bound back three times)."""
    (tmp_path / "cart.test.js").write_text("// on disk: an older text\n")
    open_text = "// the editor's buffer, not saved\n" + CART_TEST
    workspace = Workspace(tmp_path, RecordingChannel({tmp_path / "cart.test.js": open_text}))
    failure = TestFailure(
        test_id="cart.test.js::free shipping from 50",
        file=str(tmp_path / "cart.test.js"),  # runners report absolute paths too
        line=5,
        message="Error: expect(received).toBe(expected) Expected: 50 Received: 55",
        output="Error: expect(received).toBe(expected)\n\nExpected: 50\nReceived: 55\n",
    )
    text = format_report(
        replace(report(""), failures=(failure,)), tail=12, source=source_lines(workspace)
    )
    assert text.splitlines()[2] == "    line 5: expect(total([{ price: 50, qty: 1 }])).toBe(50);"


def test_no_failing_line_from_outside_the_workspace_a_secret_or_already_shown(
    tmp_path: Path,
) -> None:
    root = tmp_path / "app"
    root.mkdir()
    (tmp_path / "outside.js").write_text("the canary line\n")
    (root / ".env").write_text("API_KEY=sk-canary\n")
    (root / "t.py").write_text("def test_x():\n    assert 1 == 2\n")
    line_of = source_lines(Workspace(root, RecordingChannel()))
    assert line_of(str(tmp_path / "outside.js"), 1) is None
    assert line_of("../outside.js", 1) is None
    assert line_of(".env", 1) is None
    assert line_of("t.py", 9) is None
    assert line_of("t.py", 2) == "    assert 1 == 2"
    pytest_like = TestFailure(
        test_id="t.py::test_x",
        file="t.py",
        line=2,
        message="assert 1 == 2",
        output=">       assert 1 == 2\nE       assert 1 == 2",
    )
    text = format_report(replace(report(""), failures=(pytest_like,)), source=line_of)
    assert "line 2:" not in text  # pytest's output shows the line already


def test_the_projects_paths_are_said_from_its_root_for_the_model(tmp_path: Path) -> None:
    """unittest's tracebacks and node's stack frames name the project's files by absolute path:
    the model reads them from the root, as its tools name them (seen in the benchmark: every
    unittest failure carried the copy's 70-character folder, different in every run); paths
    outside the project stay whole."""
    root = tmp_path / "app"
    root.mkdir()
    traceback = UNITTEST_OUTPUT.replace("/home/u/app", str(root))
    frames = (
        "Error: boom\n"
        f"    at total ({root}/cart.js:9:11)\n"
        f"    at Object.<anonymous> ({root}/cart.test.js:4:10)\n"
        f"    at helper ({tmp_path}/application/x.js:1:1)\n"
    )
    failure = replace(
        report("").failures[0], file=str(root / "cart.test.js"), output=frames + traceback
    )
    text = format_report(replace(report(""), failures=(failure,)), tail=20, root=root)
    assert f"{root}/" not in text
    assert "FAILED cart.test.js::shipping under 50 at cart.test.js:8: " in text
    assert "    at total (cart.js:9:11)" in text
    assert "    at Object.<anonymous> (cart.test.js:4:10)" in text
    assert f"    at helper ({tmp_path}/application/x.js:1:1)" in text  # not the project's
    assert '      File "test_stack.py", line 16, in test_peek_empty' in text
    # the user's view (no root) keeps them whole; the file system's root is no project's
    assert f'File "{root}/test_stack.py", line 16' in format_report(report(traceback), tail=20)
    assert format_report(report(traceback), tail=20, root=Path("/")) == format_report(
        report(traceback), tail=20
    )


INITIALS = """// the first letter of each part of the name, in capitals.
function initials(name) {
  return name
    .split(" ")
    .map((part) => part[0].toUpperCase())
    .join("");
}
"""
INITIALS_TEST = """const { initials } = require("./initials");

test("extra spaces between and around the names", () => {
  expect(initials("  Grace  Brewster Hopper ")).toBe("GBH");
});
"""


def test_a_failure_in_the_code_under_test_shows_the_tests_line_that_called_it(
    tmp_path: Path,
) -> None:
    """jest names the test's line only in a stack frame: the model reads that line's text
    too, the input that broke the code (held-out bench: told only that `part[0]` was
    undefined, a small model never saw which name the test passed)."""
    (tmp_path / "initials.js").write_text(INITIALS)
    (tmp_path / "initials.test.js").write_text(INITIALS_TEST)
    workspace = Workspace(tmp_path, RecordingChannel())
    output = (
        "TypeError: Cannot read properties of undefined (reading 'toUpperCase')\n"
        f"    at toUpperCase ({tmp_path}/initials.js:5:28)\n"
        "    at Array.map (<anonymous>)\n"
        f"    at map ({tmp_path}/initials.js:5:6)\n"
        f"    at Object.initials ({tmp_path}/initials.test.js:4:10)\n"
        f"    at Promise.finally.completed ({CIRCUS}:1557:28)\n"
    )
    failure = TestFailure(
        test_id="initials.test.js::extra spaces between and around the names",
        file="initials.js",
        line=5,
        message="TypeError: Cannot read properties of undefined (reading 'toUpperCase')",
        output=output,
    )
    text = format_report(
        replace(report(""), failures=(failure,)),
        tail=12,
        source=source_lines(workspace),
        root=tmp_path,
    )
    assert text.splitlines()[2:5] == [
        "    line 5: .map((part) => part[0].toUpperCase())",
        "    called from initials.test.js:4: "
        'expect(initials("  Grace  Brewster Hopper ")).toBe("GBH");',
        "        at toUpperCase (initials.js:5:28)",
    ]
    # an assertion of the test itself: its line is the failure's own, said once
    asserted = replace(failure, file="initials.test.js", line=4, output="Expected: 1\n" + output)
    text = format_report(
        replace(report(""), failures=(asserted,)), tail=12, source=source_lines(workspace)
    )
    assert "called from" not in text
    assert text.count('toBe("GBH")') == 1
