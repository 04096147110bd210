"""The harness keeps state/task/current-task.md current itself: each step's progress (files
changed with a gist, test totals and the first failure), the blockers it saw (a failure that
persists, a denied command, a loop-guard pause) and the end status, whatever the model does."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.memory.layout import Layout
from agent_lsp.memory.state import KEEP_ENTRIES, add_task_entry, start_task, write_task_section
from agent_lsp.messages import TaskStatus
from agent_lsp.safety.policy import DENY
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_agent import make_session

TASK = Task(kind=TaskKind.TASK, instruction="make average() return the mean")


def call(name: str, **args: object) -> Reply:
    return Reply(tool_calls=[ToolCall(name, args)])


def task_file(root: Path) -> str:
    return (root / ".agent-lsp/state/task/current-task.md").read_text()


async def test_a_scripted_task_leaves_the_progress_of_every_step_its_blockers_and_its_end(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        call("run_tests"),
        call("run_command", command="curl -s https://example.com/mean"),
        call("run_tests", targets=["tests/test_calc.py"]),
        call("read_file", path="calc.py"),
        call("edit_file", path="calc.py", old_text=BUG, new_text=FIX),
        call("run_tests"),
        Reply("Fixed average(): it divided by len(values) + 1."),
    )
    channel = RecordingChannel()
    channel.answers = [DENY]
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(TASK, channel)
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED, outcome

    failure = "tests/test_calc.py::test_average (assert 3.0 == 4)"
    assert task_file(project) == (
        "# Current task\n\n"
        "## goal\nmake average() return the mean\n\n"
        "### definition of done\n"
        "- tests: the tests affected by each change first, then the full suite (pytest) passes on "
        "the editor's text\n\n"
        "## progress\n"
        f"- step 1: tests: 1 passed, 1 failed, 0 errors, 0 skipped, first failure: {failure}\n"
        f"- step 3: tests: 1 passed, 1 failed, 0 errors, 0 skipped, first failure: {failure}\n"
        "- step 5: changed calc.py (now `return sum(values) / len(values)`)\n"
        "- step 6: tests: 2 passed, 0 failed, 0 errors, 0 skipped\n\n"
        "## blockers\n"
        "- step 2: command `curl -s https://example.com/mean` denied (user: denied)\n"
        "- step 3: tests/test_calc.py::test_average still fails (since step 1)\n\n"
        "## outcome\n"
        "completed after 7 steps (done); files changed: calc.py\n"
        "Fixed average(): it divided by len(values) + 1.\n\n"
    )


async def test_a_loop_guard_pause_is_a_blocker_and_the_end_status_says_paused(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(*(call("list_files") for _ in range(12)))
    session = make_session(plain, fake_openai.base_url)
    outcome = await session.run_task(
        Task(kind=TaskKind.TASK, instruction="look"), RecordingChannel()
    )
    await session.aclose()
    assert outcome.status is TaskStatus.PAUSED, outcome
    text = task_file(plain)
    blockers = text.split("## blockers\n")[1].split("\n\n")[0]
    assert blockers.endswith(f"- step {outcome.steps}: {outcome.summary}")
    assert text.endswith(
        f"## outcome\npaused after {outcome.steps} steps (loop); files changed: none\n"
        f"{outcome.summary}\n\n"
    )


def test_the_file_keeps_the_last_entries_and_counts_the_others(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    layout.mount()
    start_task(layout, "goal")
    write_task_section(layout, "progress", "The model's own words.")
    for step in range(1, KEEP_ENTRIES + 4):
        add_task_entry(layout, "progress", f"- step {step}: did {step}")
    write_task_section(layout, "progress", "Rewritten by the model.")  # keeps the entries
    entries = "".join(f"- step {n}: did {n}\n" for n in range(4, KEEP_ENTRIES + 4))
    assert layout.task_file.read_text() == (
        "# Current task\n\n## goal\ngoal\n\n## progress\nRewritten by the model.\n"
        f"- (3 earlier entries not shown)\n{entries}\n"
    )
