"""In the editor: a model that stops while the tests fail is nudged once, then the task ends
with its words; a folder without a test runner says its result is unverified."""

from __future__ import annotations

import re
from pathlib import Path

from lsprotocol import types as t

from tests.conftest import BUG
from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.scripts import outcome


async def test_the_editor_shows_the_words_of_a_model_that_stopped(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.default_reply = Reply("I give up on this one.")
    calc = project / "calc.py"
    async with editor_session("vscode", project, server_env) as client:
        uri = client.open(calc)
        started = await ask_agent_to_fix(client, uri)
        done = await client.wait_for_message("agent-lsp: failed", timeout=240)
        stopped = (  # the model's words, then how to go on with a hint
            "agent-lsp: failed: stopped: the model did not continue: I give up on this one."
            f" — continue task {started['taskId']} with a hint: the command agentLsp.continue,"
            " or the code action “Agent: continue the stopped task…”"
        )
        assert re.fullmatch(outcome(stopped), done.message)
        assert client.buffers[uri].count(BUG) == 1 and client.edits_received == []
    assert len(fake_openai.requests) == 2  # the task, one nudge


async def test_the_editor_says_an_unverified_result_is_unverified(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "notes.py").write_text("x = 1\n")
    fake_openai.script(Reply("Looks fine to me."))
    async with editor_session("vscode", folder, server_env) as client:
        client.open(folder / "notes.py")
        result = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(
                command="agentLsp.runTask", arguments=[{"task": "tidy notes.py"}]
            )
        )
        assert isinstance(result, dict) and "taskId" in result
        done = await client.wait_for_message("agent-lsp: completed", timeout=240)
    assert done.message.startswith(
        "agent-lsp: completed: unverified: no test runner found, so nothing checked the result"
    )
    assert done.type == t.MessageType.Info
