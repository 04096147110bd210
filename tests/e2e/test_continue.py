"""Continue a stopped task from the editor: the code action where it stopped, then
`agentLsp.continue` with a hint goes on in the same task and conversation."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.e2e.test_steer import run_task
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script

TASK = "make the failing test pass"


def read(path: str) -> Reply:
    return Reply(tool_calls=[ToolCall("read_file", {"path": path})])


async def test_a_task_stopped_at_max_steps_continues_with_the_hint_in_the_same_conversation(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(read("calc.py"), read("tests/test_calc.py"), read("pyproject.toml"))
    async with editor_session("vscode", project, server_env, {"maxSteps": 3}) as client:
        uri = client.open(project / "calc.py")
        started = await run_task(client, TASK)
        task_id = started["taskId"]
        stopped = await client.wait_for_message("agent-lsp: failed: max steps (3)")
        assert f"continue task {task_id} with a hint" in stopped.message
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=t.Range(
                    start=t.Position(line=0, character=0), end=t.Position(line=0, character=0)
                ),
                context=t.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is not None
        [go_on] = [a for a in actions if a.title == "Agent: continue the stopped task…"]
        assert isinstance(go_on, t.CodeAction) and go_on.command is not None
        assert go_on.command.command == "agentLsp.continue"
        assert list(go_on.command.arguments or []) == [{"taskId": task_id}]

        _read, edit, run_tests, answer = fix_average_script()
        fake_openai.script(edit, run_tests, answer)
        hint = "the bug is the + 1 in average()"
        continued = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(
                command="agentLsp.continue", arguments=[{"taskId": task_id, "hint": hint}]
            )
        )
        assert continued == {"taskId": task_id}  # the same task
        await client.wait_for_message("agent-lsp: completed")
        earlier = fake_openai.requests[2]["messages"][1:]
        sent = fake_openai.requests[3]["messages"][1:]
        assert sent[: len(earlier)] == earlier
        assert [m["role"] for m in sent[len(earlier) :]] == ["assistant", "tool", "user"]
        assert sent[-1]["content"] == hint

        again = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.continue", arguments=[{"hint": "more"}])
        )
        assert isinstance(again, dict) and "no stopped task to continue" in again["error"]
        assert "completed" in again["error"]
        await client.wait_for_message("no stopped task to continue")
    assert len(fake_openai.requests) == 6
