"""An ACP client's MCP servers: `agent-lsp acp` driven by the SDK's client side passes a stdio
server (tests/mcp/tiny_server.py) in `session/new`; the fake model finds its tool through
`mcp_tools` and calls it with `mcp_call`; the call is put to the client as a permission request
naming the server, the tool and the arguments, and runs once allowed (with the environment the
client gave the server). The capabilities say honestly that only stdio servers are spoken; an
http one is said and left out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, EnvVariable, HttpMcpServer, McpServerStdio

from tests.acp.test_acp import Recorder, acp_agent
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.mcp.conftest import TINY
from tests.scripts import tool_messages

pytestmark = pytest.mark.timeout(120)


async def test_initialize_declares_stdio_mcp_servers_only(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    async with spawn_agent_process(
        Recorder(), sys.executable, "-m", "agent_lsp", "acp", env=server_env
    ) as (conn, _):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )
    assert init.agent_capabilities is not None
    mcp = init.agent_capabilities.mcp_capabilities
    assert mcp is not None and (mcp.http, mcp.sse) == (False, False)


@pytest.mark.parametrize(("answer", "ran"), [("allow_once", True), ("reject_once", False)])
async def test_a_client_mcp_server_is_called_after_the_client_allows_it(
    project: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
    tmp_path: Path,
    answer: str,
    ran: bool,
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("mcp_tools", {"server": "tiny", "query": "environment"})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "mcp_call",
                    {"server": "tiny", "tool": "env", "arguments": {"name": "TINY_NOTE"}},
                )
            ]
        ),
        Reply("Read it."),
    )
    tiny = McpServerStdio(
        name="tiny",
        command=sys.executable,
        args=[str(TINY)],
        env=[EnvVariable(name="TINY_NOTE", value="from the client")],
    )
    remote = HttpMcpServer(type="http", name="remote", url="http://127.0.0.1:9/mcp", headers=[])
    client = Recorder(answer=answer)
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[tiny, remote])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("read the note")])
    assert done.stop_reason == "end_turn"
    first = {t["function"]["name"]: t["function"] for t in fake_openai.requests[0]["tools"]}
    assert "tiny:\n  add: Add two whole numbers." in first["mcp_tools"]["description"]
    (asked, options), *_ = client.asked
    assert asked.title is not None and asked.title.startswith(
        'agent-lsp wants to call the MCP tool env of server tiny with {"name": "TINY_NOTE"}'
    )
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
    found, called = (json.loads(m) for m in tool_messages(fake_openai.requests[-1]))
    assert json.loads(found["output"])["tool"] == "env"
    if ran:
        assert called["status"] == "success" and called["output"] == "from the client"
    else:
        assert called["error"].startswith("not run: user: denied")
    said = client.said()
    assert "MCP server remote (http) not connected: agent-lsp connects stdio MCP servers" in said
