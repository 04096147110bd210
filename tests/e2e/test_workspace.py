"""Multi-root workspaces and settings pulled with workspace/configuration."""

from __future__ import annotations

import sys
from pathlib import Path

from lsprotocol import types as t
from pytest_lsp import ClientServerConfig

from agent_lsp.demo import copy_sample
from tests.e2e.editor_client import EditorClient, _make_client, capabilities
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script, tool_messages


async def start(env: dict[str, str], folders: list[Path], config: object = None) -> EditorClient:
    client = await ClientServerConfig(
        server_command=[sys.executable, "-m", "agent_lsp", "serve"],
        client_factory=_make_client,
        server_env=env,
    ).start()
    assert isinstance(client, EditorClient)
    if config is not None:
        client.set_configuration(config, section="agentLsp")
    await client.initialize_session(
        t.InitializeParams(
            capabilities=capabilities("vscode"),
            workspace_folders=[t.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
        )
    )
    return client


async def test_each_folder_is_its_own_project(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    first = copy_sample(tmp_path / "first")
    second = copy_sample(tmp_path / "second")
    (second / "calc.py").write_text((second / "calc.py").read_text() + "\n# second copy\n")
    fake_openai.script(*fix_average_script())
    client = await start(server_env, [first, second])
    try:
        uri = client.open(second / "calc.py")
        await ask_agent_to_fix(client, uri)
        await client.wait_for_message("agent-lsp: completed")
        system = fake_openai.requests[0]["messages"][0]["content"]
        assert f"on the project at {second.resolve()}" in system
        assert "# second copy" in tool_messages(fake_openai.requests[1])[0]  # read there
        assert "return sum(values) / len(values)" in client.buffers[uri]
        assert (first / "calc.py").read_text() == (tmp_path / "first" / "calc.py").read_text()
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_settings_pulled_from_the_editor(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    read = Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})])
    fake_openai.script(read, read, read)
    client = await start(server_env, [project], config={"maxSteps": 2})
    try:
        await ask_agent_to_fix(client, client.open(project / "calc.py"))
        failed = await client.wait_for_message("agent-lsp: failed")
        assert "max steps (2) reached" in failed.message
        assert len(fake_openai.requests) == 2
    finally:
        await client.shutdown_session()
        await client.stop()
