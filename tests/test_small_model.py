"""The harness for a small local model: edits written in words, a correction with the exact
syntax bounded by repeated unusable replies (not by one reply in words), the small-model
profile's first look, and the tests checked after every edit — the real openai client against
the fake server, real pytest on the sample project."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.loop.prompt import TEST_FIX
from agent_lsp.loop.small import (
    EXAMPLE_ANSWER,
    EXAMPLE_TASK,
    FILES_HEAD,
    FILES_TAKEN,
    TESTS_HEAD,
    is_small,
)
from agent_lsp.loop.words import edits_in_words
from agent_lsp.messages import TaskStatus
from agent_lsp.session import Session
from agent_lsp.task import DiagnosticInfo, Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_agent import make_session

TASK = Task(kind=TaskKind.TASK, instruction="Make the failing test in test_calc.py pass.")
SEARCH_REPLACE = f"""The mean divides by one too many.

calc.py
```python
<<<<<<< SEARCH
{BUG.rstrip()}
=======
{FIX.rstrip()}
>>>>>>> REPLACE
```
"""
WHOLE_DEFINITION = f'''Here is the corrected function:

```python
def average(values: list[float]) -> float:
    """The arithmetic mean of a non-empty list."""
{FIX.rstrip()}
```
'''


def small(project: Path, server: FakeOpenAIServer) -> Session:
    return make_session(project, server.base_url, model={**_model(server), "profile": "small"})


def _model(server: FakeOpenAIServer) -> dict[str, object]:
    return {
        "baseUrl": server.base_url,
        "name": "fake-model",
        "apiKey": "test-key",
        "maxRetries": 0,
        "timeout": 20,
    }


def results(request: dict[str, Any]) -> str:
    """The last tool result the model read (the text protocol: a user message)."""
    last = request["messages"][-1]
    assert last["role"] == "user" and last["content"].startswith("<tool_result")
    return str(last["content"])


@pytest.mark.parametrize(
    ("profile", "window", "name", "expected"),
    [
        ("auto", 16_384, "whatever", True),
        ("auto", 128_000, "qwen2.5-coder:1.5b", True),
        ("auto", 128_000, "Qwen2.5-Coder-7B-Instruct-GGUF", True),
        ("auto", 128_000, "qwen2.5-coder-32b-instruct", False),
        ("auto", 128_000, "gpt-4o-mini", False),
        ("auto", None, "deepseek-chat", False),
        ("small", 128_000, "gpt-4o", True),
        ("full", 8_192, "tiny-1b", False),
    ],
)
def test_the_small_profile_is_chosen_from_the_window_and_the_name(
    profile: str, window: int | None, name: str, expected: bool
) -> None:
    assert is_small(profile, window, name) is expected


async def test_a_search_replace_block_in_words_is_applied_and_proved_by_the_tests(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """A full-profile model that writes its fix as a block instead of calling edit_file: the
    edit lands, the tests pass, the task is done after that one call."""
    fake_openai.script(Reply(SEARCH_REPLACE))
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert outcome.verified
    assert (project / "calc.py").read_text().count(FIX) == 1
    assert BUG not in (project / "calc.py").read_text()
    assert (project / "tests" / "test_calc.py").read_text().count("average") >= 1
    assert len(fake_openai.requests) == 1


async def test_a_block_that_does_not_match_is_corrected_with_the_exact_syntax(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    wrong = SEARCH_REPLACE.replace(BUG.rstrip(), "    return sum(values) / len(values) + 1")
    fake_openai.script(Reply(wrong), Reply(SEARCH_REPLACE))
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    told = fake_openai.requests[1]["messages"][-1]
    assert told["role"] == "user"
    assert "The edits written in your reply could not be applied" in told["content"]
    assert "<tool_call>" in told["content"] and ">>>>>>> REPLACE" in told["content"]
    assert (project / "calc.py").read_text().count(FIX) == 1


async def test_unusable_calls_stop_the_task_only_after_three_in_a_row(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """A reply that tries a call the harness cannot read is not the model giving up: it is told
    the exact syntax; three such replies in a row end the task, saying why."""
    broken = '```json\n{"name": "edit_file", "arguments": {"path": "calc.py", "old_text": \n```'
    fake_openai.default_reply = Reply(broken)
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.FAILED
    assert outcome.stop_reason == "malformed calls"
    assert outcome.summary.startswith("stopped: 3 replies in a row without a usable tool call")
    assert len(fake_openai.requests) == 3
    for request in fake_openai.requests[1:]:
        last = request["messages"][-1]["content"]
        assert (
            '<tool_call>{"name": "read_file", "arguments": {"path": "src/app.py"}}</tool_call>'
            in (last)
        )
    assert "After 1 more" not in fake_openai.requests[1]["messages"][-1]["content"]
    assert "the task stops here" in fake_openai.requests[2]["messages"][-1]["content"]
    assert (project / "calc.py").read_text().count(BUG) == 1


async def test_the_small_profile_shows_the_failures_and_the_files_first(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """Its first request, in the shape a small model answers best: short rules with the six
    tools one line each, one worked exchange, the files whole (the tests for reference, then
    the code to change, each with an acknowledgement), then the task and the failures last; a
    fixed definition written in a fenced block, naming no file, is applied to the file that
    was shown."""
    fake_openai.script(Reply(WHOLE_DEFINITION))
    before = (project / "calc.py").read_text()
    test_text = (project / "tests" / "test_calc.py").read_text()
    session = small(project, fake_openai)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    first = fake_openai.requests[0]
    assert "tools" not in first  # the text protocol: a few lines, not a template's schemas
    messages = first["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    system = messages[0]["content"]
    offered = re.findall(r"^- (\w+) \{([^}]*)\}: ", system, re.M)
    assert offered == [
        ("read_file", "path, start_line?, end_line?"),
        ("list_files", "path?, glob?"),
        ("search_text", "pattern, path?, regex?"),
        ("edit_file", "path, old_text, new_text"),
        ("write_file", "path, content"),
        ("run_tests", "targets?"),
    ]
    assert '"additionalProperties"' not in system  # no JSON schema
    assert "<tool_call>" in system and "SEARCH/REPLACE" in system
    assert (messages[1]["content"], messages[2]["content"]) == (EXAMPLE_TASK, EXAMPLE_ANSWER)
    assert messages[3]["content"] == (
        f"{TESTS_HEAD}\n\ntests/test_calc.py\n```\n{test_text.rstrip()}\n```"
    )
    assert messages[5]["content"] == f"{FILES_HEAD}\n\ncalc.py\n```\n{before.rstrip()}\n```"
    assert messages[4]["content"] == messages[6]["content"] == FILES_TAKEN
    task = messages[7]["content"]
    assert task.startswith(TASK.instruction + "\n\nThe tests fail now:\npytest: ")
    assert "FAILED tests/test_calc.py::test_average" in task
    assert "hint:" not in task and "Project map" not in task
    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert (project / "calc.py").read_text().count(FIX) == 1
    # one call for the task; then its experience is distilled: the first look's failing run,
    # fixed and passing, is a fail-fix-pass like any other
    assert len(fake_openai.requests) == 2
    assert "Outcome: completed after 1 steps" in fake_openai.requests[1]["messages"][-1]["content"]


async def test_a_failing_test_sent_from_the_editor_asks_for_the_code_it_tests_to_be_fixed(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """Ask agent to fix, on a failing test's line: the task says the fix belongs in the code
    the test checks (told only "fix this problem in test_summary.py", the small model rewrote
    the test, and the run ended with nothing fixed)."""
    fake_openai.script(Reply(SEARCH_REPLACE))
    test_before = (project / "tests" / "test_calc.py").read_text()
    task = Task(
        kind=TaskKind.FIX,
        instruction="",
        path="tests/test_calc.py",
        diagnostic=DiagnosticInfo(message="assert 3.0 == 4", line=8, source="agent-lsp"),
    )
    session = small(project, fake_openai)
    outcome = await session.run_task(task, RecordingChannel())
    await session.aclose()
    sent = fake_openai.requests[0]["messages"][-1]["content"]
    assert sent.startswith(
        "Fix this problem in tests/test_calc.py at line 9: [agent-lsp] assert 3.0 == 4\n\n"
        + TEST_FIX.format(path="tests/test_calc.py")
    )
    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert (project / "calc.py").read_text().count(FIX) == 1
    assert (project / "tests" / "test_calc.py").read_text() == test_before


async def test_after_an_edit_the_affected_tests_verdict_joins_its_result(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    half = "    return sum(values) / (len(values) + 2)\n"  # still wrong
    fake_openai.script(
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": BUG, "new_text": half})
            ]
        ),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": half, "new_text": FIX})
            ]
        ),
        Reply("Fixed."),
    )
    session = small(project, fake_openai)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    after_first = results(fake_openai.requests[1])
    assert "\n[success]\nedited calc.py at line 10\n" in after_first
    assert "Checked after this edit, the tests affected by it (tests/test_calc.py)" in after_first
    assert "FAILED tests/test_calc.py::test_average" in after_first
    after_second = results(fake_openai.requests[2])
    assert "Checked after this edit" in after_second and "passed" in after_second
    assert "FAILED" not in after_second


async def test_the_small_profile_follows_the_window_the_server_serves(project: Path) -> None:
    """A llama.cpp server that says it serves 8,192 tokens (`/props`) gets the small profile
    for a model whose name says nothing of its size; one serving 131,072 the full one."""
    for n_ctx, small_profile in ((8_192, True), (131_072, False)):
        props = {"default_generation_settings": {"n_ctx": n_ctx}}
        with FakeOpenAIServer(props=props, context_window=n_ctx) as server:
            server.script(Reply("Nothing to do."))
            session = make_session(project, server.base_url)
            await session.run_task(TASK, RecordingChannel())
            await session.aclose()
            first = server.requests[0]
            assert ("tools" not in first) is small_profile, n_ctx
            user = first["messages"][-1]["content"]
            assert ("The tests fail now:" in user) is small_profile, n_ctx


def test_a_block_whose_path_is_an_examples_lands_where_its_search_text_is() -> None:
    files = {"calc.py": BUG, "tests/test_calc.py": "from calc import average\n"}
    text = f"path/to/file.py\n<<<<<<< SEARCH\n{BUG}=======\n{FIX}>>>>>>> REPLACE\n"
    found = edits_in_words(text, files.get, ["tests/test_calc.py", "calc.py"])
    assert [(e.path, e.old, e.new) for e in found.edits] == [
        ("calc.py", BUG.rstrip("\n"), FIX.rstrip("\n"))
    ]


async def test_a_small_model_that_wrote_its_file_back_unchanged_is_asked_the_same_again_warmer(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """Its code block was the file as it is: no edit. Kept in the history and answered, that
    echo was copied again at every temperature (held-out bench); so the same request goes
    again, warmer, without it — the history as before, nothing added."""
    before = (project / "calc.py").read_text()
    fake_openai.script(Reply(f"calc.py\n```python\n{before}```\n"), Reply(SEARCH_REPLACE))
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second = fake_openai.requests[:2]  # (a third: the experience distilled at the end)
    assert second["messages"] == first["messages"]
    assert (first["temperature"], second["temperature"]) == (0.0, 0.5)
    assert any("the reply changed nothing: asking again" in e.message for e in channel.events)
    assert (project / "calc.py").read_text().count(FIX) == 1


async def test_a_small_model_that_echoes_its_own_wrong_edit_starts_over_from_its_first_request(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """Its first edit fixed average() but broke add() (kept: it fixed a test), and its next
    reply wrote that wrong file back unchanged: stuck on it (held-out bench: every later
    request brought the same wrong file back, at any temperature). Its edit is undone — the
    editor receives calc.py as it was — and its first request goes again, warmer: the fix
    then lands on the original text."""
    before = (project / "calc.py").read_text()
    wrong = before.replace("return a + b", "return a - b").replace(BUG, FIX)
    echo_of_wrong = Reply(f"calc.py\n```python\n{wrong}```\n")
    fake_openai.script(echo_of_wrong, echo_of_wrong, Reply(SEARCH_REPLACE))
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second, third = fake_openai.requests[:3]
    assert third["messages"] == first["messages"]  # the first request again, nothing added
    assert len(second["messages"]) > len(first["messages"])  # after the wrong edit
    assert [r["temperature"] for r in (first, second, third)] == [0.0, 0.0, 0.5]
    calc = (project / "calc.py").resolve()
    assert [text for path, text, _ in channel.edits if path == calc] == [
        wrong,
        before,
        before.replace(BUG, FIX),
    ]
    assert any("undoing it (calc.py)" in e.message for e in channel.events)
    assert (project / "calc.py").read_text() == before.replace(BUG, FIX)


async def test_an_edit_that_breaks_passing_tests_and_fixes_none_is_undone_and_asked_afresh(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The first look saw test_add pass and test_average fail. The model's edit left
    test_average failing and broke test_add: built on, such a step back grew (held-out bench:
    a roman numeral edit that broke the two passing tests was edited further until the tries
    ran out). It is undone — the editor receives calc.py as it was — and the first request
    goes again, warmer, nothing of the wrong answer in it; the fix then lands on the original."""
    before = (project / "calc.py").read_text()
    broken = before.replace("return a + b", "return a - b")
    fake_openai.script(Reply(f"calc.py\n```python\n{broken}```\n"), Reply(SEARCH_REPLACE))
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second = fake_openai.requests[:2]
    assert second["messages"] == first["messages"]  # the first request again, nothing added
    assert [r["temperature"] for r in (first, second)] == [0.0, 0.5]
    calc = (project / "calc.py").resolve()
    assert [text for path, text, _ in channel.edits if path == calc] == [
        broken,
        before,
        before.replace(BUG, FIX),
    ]
    said = [e.message for e in channel.events if "undoing it" in e.message]
    assert said == [
        "the edit broke test_add, which passed before: undoing it (calc.py) and asking the "
        "first request again, warmer"
    ]
    assert (project / "calc.py").read_text() == before.replace(BUG, FIX)


@pytest.mark.parametrize(
    ("wrong_edit", "why"),
    [
        (
            lambda before: before.replace(BUG, "    return sum(values) / (len(values) + 2)\n"),
            "the edit fixed none of the failing tests (test_average still fails)",
        ),
        (
            lambda before: "import no_such_helper_module\n" + before,
            "the edit fixed none of the failing tests (test_average still fails)",
        ),
        (
            lambda before: (
                before.replace(BUG, "    return sum(values) / (len(values) + 2)\n")
                + "".join(f"# note {n}\n" for n in range(30))
            ),
            "the edit fixed none of the failing tests (test_average still fails)",
        ),
    ],
    ids=["fixed-none", "no-longer-imports", "grew-the-file"],
)
async def test_an_edit_that_fixes_no_failing_test_is_undone_and_asked_afresh(
    project: Path, fake_openai: FakeOpenAIServer, wrong_edit: Any, why: str
) -> None:
    """The model's edit left test_average failing and broke nothing. Shown that failure, a
    small model wrote its own wrong edit back in 15 of 20 such requests and solved none
    (held-out bench): instead the edit is undone — the editor receives calc.py as it was —
    and the first request goes again, warmer, nothing of the wrong answer in it; the fix
    then lands on the original. So for two wrong edits the start over first missed (roman):
    one after which the module no longer imports — no test passes, the failing tests' ids
    gone behind the module's own error, which looked like something fixed — and one that grew
    the file by 30 lines, whose undo edit_file refused as a large deletion."""
    before = (project / "calc.py").read_text()
    wrong = wrong_edit(before)
    fake_openai.script(Reply(f"calc.py\n```python\n{wrong}```\n"), Reply(SEARCH_REPLACE))
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second = fake_openai.requests[:2]
    assert second["messages"] == first["messages"]
    assert [r["temperature"] for r in (first, second)] == [0.0, 0.5]
    calc = (project / "calc.py").resolve()
    assert [text for path, text, _ in channel.edits if path == calc] == [
        wrong,
        before,
        before.replace(BUG, FIX),
    ]
    said = [e.message for e in channel.events if "undoing it" in e.message]
    assert said == [f"{why}: undoing it (calc.py) and asking the first request again, warmer"]
    assert (project / "calc.py").read_text() == before.replace(BUG, FIX)


async def test_the_undo_of_a_wrong_edit_brings_back_the_undefined_name_it_replaced(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The bug is an undefined name (`lenght`); the model's edit replaced it with another wrong
    expression. Undoing that edit writes the undefined name back — which edit_file refuses
    once from the model, and the start over confirms: it is the file as it was."""
    calc = project / "calc.py"
    before = calc.read_text().replace(BUG, "    return sum(values) / lenght(values)\n")
    calc.write_text(before)
    wrong = before.replace("lenght(values)", "(len(values) + 2)")
    fixed = before.replace("lenght(values)", "len(values)")
    fake_openai.script(
        Reply(f"calc.py\n```python\n{wrong}```\n"), Reply(f"calc.py\n```python\n{fixed}```\n")
    )
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second = fake_openai.requests[:2]
    assert second["messages"] == first["messages"]
    assert [text for path, text, _ in channel.edits if path == calc.resolve()] == [
        wrong,
        before,
        fixed,
    ]
    assert calc.read_text() == fixed


async def test_half_of_a_fix_across_two_files_stays_and_the_model_is_shown_its_failure(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """average() is wrong in two files (units.count adds one, calc.average doubles): the
    model's first edit fixes units.py, and test_average still fails — half of the fix, which
    fixes no test alone. It stays: the next request builds on it (the failure shown, not the
    first request again) and the other half lands on top of it."""
    (project / "units.py").write_text(
        "def count(values: list[float]) -> int:\n    return len(values) + 1\n"
    )
    calc = project / "calc.py"
    calc.write_text(
        calc.read_text()
        .replace('"""A tiny', 'from units import count\n\n"""A tiny')
        .replace(BUG, "    return 2 * sum(values) / count(values)\n")
    )
    units_fixed = "def count(values: list[float]) -> int:\n    return len(values)\n"
    calc_fixed = calc.read_text().replace("2 * sum(values)", "sum(values)")
    fake_openai.script(
        Reply(f"units.py\n```python\n{units_fixed}```\n"),
        Reply(f"calc.py\n```python\n{calc_fixed}```\n"),
    )
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second = fake_openai.requests[:2]
    shown = [m["content"] for m in first["messages"] if m["content"].startswith(FILES_HEAD)]
    assert len(shown) == 1 and "units.py" in shown[0] and "calc.py" in shown[0]
    assert len(second["messages"]) > len(first["messages"])  # built on, not asked afresh
    assert "test_average" in second["messages"][-1]["content"]
    assert second["temperature"] == 0.0
    assert not any("undoing it" in e.message for e in channel.events)
    assert (project / "units.py").read_text() == units_fixed
    assert calc.read_text() == calc_fixed


async def test_an_edit_that_fixes_one_test_and_breaks_another_is_kept(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """Progress is not a step back: an edit that fixed test_average while it broke test_add
    stays, and the model is told the failure it made (no start over)."""
    before = (project / "calc.py").read_text()
    both = before.replace("return a + b", "return a - b").replace(BUG, FIX)
    fake_openai.script(
        Reply(f"calc.py\n```python\n{both}```\n"),
        Reply(f"calc.py\n```python\n{before.replace(BUG, FIX)}```\n"),
    )
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second = fake_openai.requests[:2]
    assert len(second["messages"]) > len(first["messages"])  # built on, not asked afresh
    assert "test_add" in second["messages"][-1]["content"]
    assert second["temperature"] == 0.0
    assert not any("undoing it" in e.message for e in channel.events)
    assert (project / "calc.py").read_text() == before.replace(BUG, FIX)


@pytest.mark.parametrize(
    "first_reply",
    [
        "Ok.",  # the acknowledgement the first request's shown files were answered with
        "The test is wrong.\n\ntests/test_calc.py\n```python\ndef test_average():\n"
        "    assert True\n```\n",  # the test rewritten: refused
    ],
    ids=["ok", "test-rewritten"],
)
async def test_a_first_reply_that_changed_nothing_is_not_kept_the_first_request_goes_again(
    project: Path, fake_openai: FakeOpenAIServer, first_reply: str
) -> None:
    """Until the model has changed something its first request is the best one it gets:
    a first reply that changed nothing is not kept and corrected (held-out bench, through the
    editor: a first reply that wrote the test, corrected, was followed by "Ok." three times
    until the task stopped) — the same request goes again, warmer."""
    tests_before = (project / "tests" / "test_calc.py").read_text()
    fake_openai.script(Reply(first_reply), Reply(SEARCH_REPLACE))
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second = fake_openai.requests[:2]
    assert second["messages"] == first["messages"]
    assert (first["temperature"], second["temperature"]) == (0.0, 0.5)
    assert any(
        "the first reply changed nothing: asking again, warmer" in e.message for e in channel.events
    )
    assert (project / "tests" / "test_calc.py").read_text() == tests_before
    assert (project / "calc.py").read_text().count(FIX) == 1


async def test_a_wrong_edit_that_was_progress_is_kept_and_the_first_request_made_from_it(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """add() and average() both wrong: the model's edit fixed add() (test_add passes now,
    nothing broke), and its next reply wrote that file back unchanged — stuck, as with a
    wrong edit, but the edit was progress (held-out bench: a chunk fix that passed one more
    test was undone after its echo and never found again). It is not undone: the first
    request is made again from it — calc.py as it is now, test_average alone failing —
    warmer, and the fix of average() lands on top of it."""
    calc = project / "calc.py"
    original = calc.read_text()
    calc.write_text(original.replace("return a + b", "return a - b"))
    half = original  # add() fixed, average() not yet
    fake_openai.script(
        Reply(f"calc.py\n```python\n{half}```\n"),
        Reply(f"calc.py\n```python\n{half}```\n"),
        Reply(SEARCH_REPLACE),
    )
    session = small(project, fake_openai)
    channel = RecordingChannel()
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    first, second, third = fake_openai.requests[:3]
    assert [r["temperature"] for r in (first, second, third)] == [0.0, 0.0, 0.5]
    shown = [m["content"] for m in third["messages"] if m["content"].startswith(FILES_HEAD)]
    assert shown == [f"{FILES_HEAD}\n\ncalc.py\n```\n{half.rstrip()}\n```"]
    task = third["messages"][-1]["content"]
    assert "test_average" in task and "test_add" not in task, task
    assert len(third["messages"]) == len(first["messages"])  # a first request, not a sequel
    assert [text for path, text, _ in channel.edits if path == calc.resolve()] == [
        half,
        half.replace(BUG, FIX),
    ]  # nothing undone
    assert any(
        "it made test_add pass: asking the first request again" in e.message for e in channel.events
    )
    assert calc.read_text() == original.replace(BUG, FIX)


async def test_a_small_model_that_did_nothing_is_asked_again_warmer(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """At temperature 0 a small model that echoed the file back says the same again, word for
    word: each reply in a row that did nothing makes the next request warmer (0.5 a reply); a
    reply that changed something brings it back to the configured temperature."""
    before = (project / "calc.py").read_text()
    echo = Reply(f"calc.py\n```python\n{before}```\n")
    fake_openai.script(echo, echo, Reply(SEARCH_REPLACE))
    session = small(project, fake_openai)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    sent = [r.get("temperature") for r in fake_openai.requests]
    assert sent == [0.0, 0.5, 1.0, 0.0], sent  # the last: after the edit that changed calc.py


def _wrong(before: str, n: int) -> Reply:
    """The whole of calc.py back with a different wrong mean (each one an edit that lands)."""
    wrong = f"    return sum(values) / (len(values) + {n + 1})\n"
    return Reply(f"calc.py\n```python\n{before.replace(BUG, wrong)}```\n")


async def test_a_small_model_stops_after_four_tries_that_leave_the_tests_failing(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """Wrong fixes, each a real change, with echoes of the file in between (seen with the real
    model: edit, the same again twice, a warmer other edit... 13 calls, 51k tokens): replies
    that tried a fix count in all, not in a row, and the fourth ends the task, saying so. The
    echo of its own wrong edit (the fourth reply here) tried nothing and is not counted: its
    start over gets the try (held-out bench: the start over's first answer, the right half of
    a two-file fix, was the fourth try and ended the task)."""
    before = (project / "calc.py").read_text()
    fake_openai.script(_wrong(before, 1), Reply(f"calc.py\n```python\n{before}```\n"))
    fake_openai.default_reply = _wrong(before, 2)
    session = small(project, fake_openai)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.FAILED
    assert outcome.stop_reason == "attempts", outcome.summary
    assert outcome.summary.startswith("stopped: 4 tries at a fix (maxAttempts), not done:")
    assert len(fake_openai.requests) == 5  # 4 tries and the echo
    assert fake_openai.requests[4]["messages"] == fake_openai.requests[0]["messages"]
    assert "(len(values) + 3)" in (project / "calc.py").read_text()  # the last try stays


async def test_tries_through_tool_calls_count_when_the_tests_judged_them(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """A model that edits through edit_file: each edit whose affected tests fail is a try;
    `maxAttempts` set by the user ends the task at the second."""
    calls = [
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": old, "new_text": new})
            ]
        )
        for old, new in [
            (BUG, BUG.replace("+ 1", "+ 2")),
            (BUG.replace("+ 1", "+ 2"), BUG.replace("+ 1", "+ 3")),
        ]
    ]
    fake_openai.script(*calls, Reply("Fixed."))
    session = make_session(
        project,
        fake_openai.base_url,
        model={**_model(fake_openai), "profile": "small"},
        maxAttempts=2,
    )
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.stop_reason == "attempts", outcome.summary
    assert outcome.summary == "stopped: 2 tries at a fix (maxAttempts), not done"
    assert len(fake_openai.requests) == 2
    assert BUG.replace("+ 1", "+ 3") in (project / "calc.py").read_text()


async def test_the_full_profile_has_no_limit_of_tries_unless_set(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    before = (project / "calc.py").read_text()
    fixed = Reply(f"calc.py\n```python\n{before.replace(BUG, FIX)}```\n")
    fake_openai.script(*[_wrong(before, n) for n in range(1, 6)], fixed)
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    asked = [
        r for r in fake_openai.requests if not r["messages"][-1]["content"].startswith("Task:")
    ]
    assert len(asked) == 6  # five tries and the fix (besides a summary of old turns)
    assert (project / "calc.py").read_text().count(FIX) == 1


def _shown(request: dict[str, Any], head: str) -> list[str]:
    """The paths of the files a first request shows under `head` (each: its path alone on a
    line, then a fenced block)."""
    for message in request["messages"]:
        content = str(message.get("content") or "")
        if message["role"] == "user" and content.startswith(head):
            return re.findall(r"^([\w./-]+)\n```", content, re.M)
    return []


async def test_the_first_look_shows_what_the_code_under_test_imports_too(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    """A bug one import away from the test (tests/test_cart.py imports shop.cart, whose
    `from . import prices` holds the wrong price): a small model rarely reads a file it is not
    shown, so the first look shows the files the shown code imports as well."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "cart.py").write_text(
        "from . import prices\n\n\ndef total(items):\n"
        "    return sum(prices.price(item) for item in items)\n"
    )
    (tmp_path / "shop" / "prices.py").write_text(
        'PRICES = {"apple": 3}\n\n\ndef price(item):\n    return PRICES[item] * 10\n'
    )
    (tmp_path / "tests" / "test_cart.py").write_text(
        "from shop.cart import total\n\n\ndef test_total():\n"
        '    assert total(["apple", "apple"]) == 6\n'
    )
    fixed = 'PRICES = {"apple": 3}\n\n\ndef price(item):\n    return PRICES[item]\n'
    fake_openai.script(
        Reply(f"The price is ten times too high.\n\nshop/prices.py\n```\n{fixed}```")
    )
    session = small(tmp_path, fake_openai)
    task = Task(kind=TaskKind.TASK, instruction="Make the failing test in tests/test_cart.py pass.")
    outcome = await session.run_task(task, RecordingChannel())
    await session.aclose()

    first = fake_openai.requests[0]
    assert _shown(first, TESTS_HEAD) == ["tests/test_cart.py"]
    assert _shown(first, FILES_HEAD) == ["shop/cart.py", "shop/prices.py"]
    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert (tmp_path / "shop" / "prices.py").read_text() == fixed


async def test_the_first_look_follows_js_imports_of_a_folder_s_index(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    """`require("./lib")` is lib/index.js (node's resolution), and `import "./setup.mjs"` is a
    file too: both shown with the code they are imported by."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "package.json").write_text('{"name": "cart", "scripts": {"test": "jest"}}\n')
    (tmp_path / "cart.test.js").write_text(
        'const { total } = require("./cart");\n\ntest("total", () => {\n'
        "  expect(total([2, 3])).toBe(5);\n});\n"
    )
    (tmp_path / "cart.js").write_text(
        'import "./setup.mjs";\nconst { sum } = require("./lib");\n\n'
        "function total(prices) {\n  return sum(prices);\n}\n\nmodule.exports = { total };\n"
    )
    (tmp_path / "setup.mjs").write_text("globalThis.currency = 'EUR';\n")
    (tmp_path / "lib" / "index.js").write_text(
        "function sum(xs) {\n  return xs.reduce((a, b) => a - b, 0);\n}\n\n"
        "module.exports = { sum };\n"
    )
    fake_openai.script(Reply("Ok."))
    session = small(tmp_path, fake_openai)
    task = Task(kind=TaskKind.TASK, instruction="Make cart.test.js pass.")
    await session.run_task(task, RecordingChannel())
    await session.aclose()

    first = fake_openai.requests[0]
    assert _shown(first, TESTS_HEAD) == ["cart.test.js"]
    assert _shown(first, FILES_HEAD) == ["cart.js", "setup.mjs", "lib/index.js"]


async def test_a_reply_whose_edits_all_failed_is_not_taken_as_done_where_no_test_can_judge(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """No test runner to prove anything, and a reply whose only edit could not be applied
    (its SEARCH text is not in the file): nothing changed, so the task is not done — the model
    is told why and writes the block right (before: "completed, unverified" at once, calc.py
    untouched)."""
    for folder in ("tests",):
        for file in (project / folder).iterdir():
            file.unlink()
        (project / folder).rmdir()
    (project / "pyproject.toml").unlink()
    wrong = SEARCH_REPLACE.replace(BUG.rstrip(), "    return sum(values) / len(values) + 1")
    fake_openai.script(Reply(wrong), Reply(SEARCH_REPLACE))
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome.summary
    assert not outcome.verified  # still nothing ran the tests: said so
    told = fake_openai.requests[1]["messages"][-1]
    assert "The edits written in your reply could not be applied" in told["content"]
    assert (project / "calc.py").read_text().count(FIX) == 1


def _report(passed: int, failing: list[str]) -> Any:
    from adapters import TestReport
    from adapters.results import TestFailure

    failures = tuple(TestFailure(i, i.split("::")[0], 1, "assert", "") for i in failing)
    return TestReport(
        "pytest", ("pytest",), passed, len(failures), 0, 0, 0.1, failures, 1, False, ""
    )


def test_progress_and_a_step_back_are_told_apart(tmp_path: Path) -> None:
    """What the start overs decide on: an edit broke a passing test and fixed none (undo), or
    made a failing test pass and broke none (start from it) — and a narrower run, showing
    fewer failures only because it ran fewer tests, is neither."""
    from agent_lsp.loop.small import broken_by_edit, progress_by_edit

    (tmp_path / "test_a.py").write_text("")
    before = _report(2, ["test_a.py::one", "test_b.py::two"])
    broke = _report(1, ["test_a.py::one", "test_b.py::two", "test_a.py::three"])
    assert broken_by_edit(tmp_path, before, (), broke) == ["test_a.py::three"]
    assert broken_by_edit(tmp_path, before, ("test_b.py",), broke) == []  # not in what ran
    assert progress_by_edit(before, broke) == []
    better = _report(3, ["test_b.py::two"])
    assert progress_by_edit(before, better) == ["test_a.py::one"]
    assert broken_by_edit(tmp_path, before, (), better) == []
    narrower = _report(1, ["test_b.py::two"])  # test_a.py not run at all
    assert progress_by_edit(before, narrower) == []
    mixed = _report(3, ["test_b.py::two", "test_a.py::three"])  # one fixed, one broken
    assert (
        progress_by_edit(before, mixed) == [] and broken_by_edit(tmp_path, before, (), mixed) == []
    )


ROMAN_BUG = """VALUES = {"I": 1, "V": 5, "X": 10}


def from_roman(numeral: str) -> int:
    total = 0
    for letter in numeral:
        total += VALUES[letter]
    return total
"""
ROMAN_TEST = """import unittest

from roman import from_roman


class FromRoman(unittest.TestCase):
    def test_subtraction(self):
        self.assertEqual(from_roman("IV"), 4)
"""


async def test_a_unittest_traceback_reaches_the_model_with_the_projects_paths_from_its_root(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    """unittest names every file of a traceback by its absolute path: the first look's
    failures and the check after an edit say them from the root, as the model's tools do
    (held-out bench: every unittest failure carried the copy's folder, a different one in
    every run, and the model never needs it)."""
    project = tmp_path / "roman-project"
    project.mkdir()
    (project / "roman.py").write_text(ROMAN_BUG)
    (project / "test_roman.py").write_text(ROMAN_TEST)
    wrong = ROMAN_BUG.replace("total += VALUES[letter]", "total += VALUES[letter] - 1")
    fake_openai.script(Reply(f"roman.py\n```\n{wrong}```\n"), Reply("Done."))
    session = small(project, fake_openai)
    await session.run_task(
        Task(kind=TaskKind.TASK, instruction="Fix from_roman so test_roman.py passes."),
        RecordingChannel(),
    )
    await session.aclose()

    first, second = fake_openai.requests[:2]
    looked = first["messages"][-1]["content"]
    checked = second["messages"][-1]["content"]
    for sent in (looked, checked):
        assert "unittest: 0 passed, 1 failed" in sent
        assert 'File "test_roman.py", line 8, in test_subtraction' in sent
        assert str(project) not in sent
