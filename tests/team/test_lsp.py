"""Team mode through the language server: `agentLsp.runTask` with `"team": true`, the real LSP
client, the fake model scripted per role and step, real pytest."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.fakes.openai_server import FakeOpenAIServer
from tests.team.conftest import AREA, PERIMETER, TASK
from tests.team.helpers import script_feature


async def test_run_task_with_team_true_runs_the_team_in_the_editor(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    script_feature(fake_openai)
    async with editor_session("vscode", shapes, server_env) as client:
        started = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(
                command="agentLsp.runTask", arguments=[{"task": TASK, "team": True}]
            )
        )
        assert isinstance(started, dict) and set(started) == {"taskId"}, started
        done = await client.wait_for_message("agent-lsp: completed", timeout=120)
        log = client.log_text()
        buffers = {
            Path(uri.removeprefix("file://")).name: text for uri, text in client.buffers.items()
        }
    message = done.message
    assert message.startswith("agent-lsp: completed: done: 2 steps (s1, s2); full suite: 2 passed")
    assert "tokens by role: commander 35, planner 120, editor 420, reviewer 90 tokens" in message
    assert "9 model calls, 4 tool runs, tokens: 570 in, 95 out" in message
    assert "(changed: area.py, perimeter.py)" in done.message or (
        "(changed: perimeter.py, area.py)" in done.message
    )
    # the edits went through the editor (files not open are loaded into buffers there)
    assert buffers["area.py"] == AREA and buffers["perimeter.py"] == PERIMETER
    labels = sorted(p.label or "" for p in client.edits_received)
    assert labels == ["agent-lsp: edit area.py", "agent-lsp: edit perimeter.py"]
    # progress names the role and the step
    assert "agent-lsp: team: planner completed (120 tokens)" in log
    assert "agent-lsp: team: editor s1 completed (210 tokens)" in log
    assert "agent-lsp: team: editor s2 completed (210 tokens)" in log
    assert "agent-lsp: team: DONE" in log
