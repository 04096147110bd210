"""Steer a running task from the editor: an `AGENT:` comment line typed in a buffer is taken into
the conversation and removed (only that line), and `agentLsp.steer` sends a note."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_tests import until
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script

NOTE = "the bug is the + 1 in average()"


async def run_task(client: Any, text: str) -> dict[str, Any]:
    answer = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentLsp.runTask", arguments=[{"task": text}])
    )
    assert isinstance(answer, dict)
    return answer


async def test_an_agent_comment_typed_while_a_task_runs_is_taken_and_its_line_removed(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    typed = threading.Event()

    def first(_: object) -> Reply:  # the model thinks until the user has typed the note
        typed.wait(120)
        return Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})])

    fake_openai.script(first, *fix_average_script()[1:])
    async with editor_session("vscode", project, server_env) as client:
        uri = client.open(project / "calc.py")
        original = client.buffers[uri]
        await run_task(client, "make the failing test pass")
        await until(lambda: len(fake_openai.requests) >= 1)
        client.type_at_top(uri, f"# AGENT: {NOTE}\n")
        await until(lambda: any("steer" in (e.label or "") for e in client.edits_received))
        typed.set()
        await client.wait_for_message("agent-lsp: completed")
        (removal,) = [e for e in client.edits_received if "steer" in (e.label or "")]
        [change] = removal.edit.document_changes or []
        assert isinstance(change, t.TextDocumentEdit)
        assert [(e.range, e.new_text) for e in change.edits if isinstance(e, t.TextEdit)] == [
            (
                t.Range(start=t.Position(line=0, character=0), end=t.Position(line=1, character=0)),
                "",
            )
        ]
        assert client.buffers[uri] == original.replace(
            "    return sum(values) / (len(values) + 1)\n", "    return sum(values) / len(values)\n"
        )
        sent = fake_openai.requests[1]["messages"]
        assert sent[-1] == {
            "role": "user",
            "content": f"A note from the user, sent while you work: {NOTE}",
        }
        await client.wait_for_log(f"agent-lsp: steer: {NOTE}")

        # no task runs: a line typed now is left alone, and steer says there is nothing to steer
        edits = len(client.edits_received)
        client.type_at_top(uri, "# AGENT: not now\n")
        answer = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.steer", arguments=[{"note": "hello"}])
        )
        assert isinstance(answer, dict) and "no agent task is running" in answer["error"]
        await client.wait_for_message("nothing to steer")
        assert len(client.edits_received) == edits
        assert client.buffers[uri].startswith("# AGENT: not now\n")
    assert len(fake_openai.requests) == 4


async def test_agent_steer_sends_a_note_to_the_running_task(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    sent = threading.Event()

    def first(_: object) -> Reply:
        sent.wait(120)
        return Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})])

    fake_openai.script(first, *fix_average_script()[1:])
    async with editor_session("helix", project, server_env) as client:
        client.open(project / "calc.py")
        await run_task(client, "make the failing test pass")
        await until(lambda: len(fake_openai.requests) >= 1)
        answer = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.steer", arguments=[{"note": NOTE}])
        )
        assert answer == {"status": "accepted"}
        sent.set()
        await client.wait_for_message("agent-lsp: completed")
    assert fake_openai.requests[1]["messages"][-1]["content"].endswith(NOTE)
