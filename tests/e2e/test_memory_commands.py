"""The memory commands over LSP: remember, showLog, memory list/show/forget, undo."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types as t

from tests.conftest import BUG, FIX
from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.e2e.test_lsp_tests import until
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import fix_average_script


async def execute(client: EditorClient, command: str, **args: object) -> object:
    return await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command=command, arguments=[args] if args else [])
    )


async def test_log_undo_and_remember_from_the_editor(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    async with editor_session("vscode", project, server_env) as client:
        uri = client.open(project / "calc.py")
        before = client.buffers[uri]
        await ask_agent_to_fix(client, uri)
        await client.wait_for_message("agent-lsp: completed")
        assert FIX in client.buffers[uri]

        shown = await execute(client, "agentLsp.showLog")
        assert isinstance(shown, dict)
        log = Path(str(shown["path"]))
        assert client.shown_documents[-1].uri == log.as_uri()
        events = [json.loads(line) for line in log.read_text().splitlines()]
        assert {"edit_file", "run_tests"} <= {e.get("tool") for e in events}

        assert await execute(client, "agentLsp.undo") == {"status": "accepted"}
        await client.wait_for_message("agent-lsp: ")
        await until(lambda: client.buffers[uri] == before)  # back, through the editor
        assert BUG in client.buffers[uri]

        client.messages.clear()
        note = "average() must divide by len(values)"
        assert await execute(client, "agentLsp.remember", note=note) == {"status": "accepted"}
        saved = await client.wait_for_message("agent-lsp: ")
        assert saved.type == t.MessageType.Info
        listed = await execute(client, "agentLsp.memoryList")
        assert isinstance(listed, dict) and isinstance(listed["entries"], list)
        assert await execute(client, "agentLsp.remember") == {
            "error": 'agentLsp.remember needs {"note": "..."}'
        }
