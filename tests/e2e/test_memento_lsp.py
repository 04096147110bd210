"""The task state over LSP: after an `agentLsp.fix` task, `current-task.md` on disk holds the
goal, each step's progress (what changed, what the tests said) and the end status; the system
prompt opens with the task-state block; ten tool calls without reading the file bring the
reminder in the next request."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import BUG, FIX
from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.memory.helpers import distilled_reply, system_of
from tests.memory.test_memento_prompt import REMINDER
from tests.scripts import SUMMARY

TASK_FILE = ".agent-lsp/state/task/current-task.md"


def call(name: str, **args: object) -> Reply:
    return Reply(tool_calls=[ToolCall(name, args)])


async def test_a_fix_over_lsp_keeps_the_task_file_and_reminds_the_model_to_read_it(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    looks = ("calc.py", "tests/test_calc.py")
    fake_openai.script(
        call("run_tests"),
        *(call("read_file", path=looks[n % 2]) for n in range(9)),  # 10 calls, no state read
        call("read_file", path=TASK_FILE),
        call("edit_file", path="calc.py", old_text=BUG, new_text=FIX),
        call("run_tests"),
        Reply(SUMMARY),
        distilled_reply(),  # the experience distilled at the end
    )
    conventions = project / ".agent-lsp/state/project"
    conventions.mkdir(parents=True)
    (conventions / "conventions.md").write_text("- keep the calculator free of imports\n")
    async with editor_session("vscode", project, server_env, {"maxSteps": 30}) as client:
        uri = client.open(project / "calc.py")
        await ask_agent_to_fix(client, uri)
        await client.wait_for_message("agent-lsp: completed")
    requests = fake_openai.requests
    assert len(requests) == 15

    # the system prompt's first block is the task state, between its markers
    system = system_of(requests[0])
    assert system.startswith("<<<TASK STATE\n## Starting context, rebuilt at task start\n")
    block, rest = system.split("TASK STATE>>>\n\n", 1)
    assert "### Project state: conventions.md\n- keep the calculator free of imports\n" in block
    assert rest.startswith("You are agent-lsp, a coding agent")
    assert system.count("<<<TASK STATE") == system.count("TASK STATE>>>") == 1

    # the reminder: right after the 10th tool call, once, and the read that follows has the goal
    def reminders(request: dict[str, object]) -> int:
        messages = request["messages"]
        assert isinstance(messages, list)
        return sum(m.get("content") == REMINDER for m in messages if isinstance(m, dict))

    assert [reminders(r) for r in requests] == [0] * 10 + [1] * 4 + [0]
    assert requests[10]["messages"][-1] == {"role": "user", "content": REMINDER}
    read_back = str(requests[11]["messages"][-1]["content"])
    assert "## goal" in read_back and "## progress" in read_back

    failure = "tests/test_calc.py::test_average (assert 3.0 == 4)"
    text = (project / TASK_FILE).read_text()
    assert text == (
        "# Current task\n\n"
        "## goal\nFix in calc.py at line 10: average([2, 4, 6]) returned 3.0, expected 4\n\n"
        "### definition of done\n"
        "- tests: the tests affected by each change first, then the full suite (pytest) passes on "
        "the editor's text\n"
        "- diagnostic 'average([2, 4, 6]) returned 3.0, expected 4' at calc.py:10 is gone "
        "(cannot be re-checked here)\n\n"
        "## progress\n"
        f"- step 1: tests: 1 passed, 1 failed, 0 errors, 0 skipped, first failure: {failure}\n"
        "- step 12: changed calc.py (now `return sum(values) / len(values)`)\n"
        "- step 13: tests: 2 passed, 0 failed, 0 errors, 0 skipped\n\n"
        "## outcome\n"
        "completed after 14 steps (done); files changed: calc.py\n"
        f"{SUMMARY}\n\n"
    )
