"""The reference MCP servers from npm (`@modelcontextprotocol/server-everything`,
`server-filesystem`), started the way a user's config names them — node and the entry file under
the home — inside the sandbox: listed deferred, a schema loaded on demand, called, denied by a
rule; the filesystem server pointed at `/` cannot read a file of the home (the sandbox hides
it), while without the sandbox it could (the control: the test can see a leak)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.policy import ALLOW_ONCE
from agent_lsp.task import Task, TaskKind
from agent_lsp.tools.mcp_tools import McpCallArgs
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.mcp.conftest import npm_server, require_sandbox, session_with
from tests.mcp.test_mcp_agent import call, results, tools_sent

pytestmark = pytest.mark.timeout(180)
EVERYTHING = "@modelcontextprotocol/server-everything"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"


async def test_everything_is_listed_deferred_loaded_and_called_in_the_sandbox(
    tmp_path: Path, fake_openai: FakeOpenAIServer, npm_servers: Path
) -> None:
    require_sandbox()
    fake_openai.script(
        Reply(tool_calls=[ToolCall("mcp_tools", {"server": "everything", "query": "echo"})]),
        call("everything", "echo", {"message": "hello from the agent"}),
        Reply("It echoed."),
    )
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE]
    servers = {"everything": npm_server(npm_servers, EVERYTHING)}
    session = session_with(tmp_path, fake_openai.base_url, servers)
    try:
        await session.run_task(Task(kind=TaskKind.TASK, instruction="echo"), channel)
    finally:
        await session.aclose()
    first = tools_sent(fake_openai.requests[0])
    listing = first["mcp_tools"]["description"]
    assert "everything:\n  echo: Echoes back the input string" in listing
    assert "  get-sum: Returns the sum of two numbers" in listing
    assert '"message"' not in json.dumps(first)  # echo's argument: not before it is asked for
    found, ran = results(fake_openai.requests[-1])
    assert json.loads(found["output"])["arguments"]["required"] == ["message"]
    assert ran["status"] == "success", ran
    assert "hello from the agent" in ran["output"]
    assert ran["metadata"]["decision"]["sandbox"].startswith("bwrap")
    assert channel.questions[0].startswith(
        'agent-lsp wants to call the MCP tool echo of server everything with {"message": '
    )


async def test_a_deny_rule_stops_the_tool_without_asking(
    tmp_path: Path, fake_openai: FakeOpenAIServer, npm_servers: Path
) -> None:
    (tmp_path / ".agent-lsp").mkdir()
    (tmp_path / ".agent-lsp/policy.toml").write_text(
        '[[deny]]\ntool = "mcp__everything__get-sum"\nreason = "no sums"\n'
    )
    fake_openai.script(call("everything", "get-sum", {"a": 1, "b": 2}), Reply("Denied."))
    channel = RecordingChannel()
    servers = {"everything": npm_server(npm_servers, EVERYTHING, allow=["get-sum"])}
    session = session_with(tmp_path, fake_openai.base_url, servers)
    try:
        await session.run_task(Task(kind=TaskKind.TASK, instruction="sum"), channel)
    finally:
        await session.aclose()
    (got,) = results(fake_openai.requests[-1])
    assert got["status"] == "error"
    assert "deny tool mcp__everything__get-sum" in got["error"]
    assert channel.questions == []


@pytest.fixture
def canary() -> Iterator[Path]:
    """A file in the user's home, outside the workspace: what a server must not read."""
    folder = Path(tempfile.mkdtemp(prefix=".agent-lsp-mcp-canary-", dir=Path.home()))
    secret = folder / "secret.txt"
    secret.write_text("mcp-canary-7d1f\n")
    try:
        yield secret
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def read_through_filesystem(root: Path, folder: Path, path: Path, sandbox: bool) -> Any:
    servers = {"fs": npm_server(folder, FILESYSTEM, "/", allow=["read_text_file"])}
    session = session_with(root, "http://127.0.0.1:9/v1", servers, sandbox={"enabled": sandbox})
    channel = RecordingChannel()
    try:
        tools = {t.name: t for t in session.tools(Workspace(root, channel), channel)}
        return await tools["mcp_call"].run(
            McpCallArgs(server="fs", tool="read_text_file", arguments={"path": str(path)})
        )
    finally:
        await session.aclose()


async def test_the_filesystem_server_at_root_cannot_read_the_home_in_the_sandbox(
    tmp_path: Path, npm_servers: Path, canary: Path
) -> None:
    require_sandbox()
    (tmp_path / "notes.txt").write_text("in the workspace\n")
    inside = await read_through_filesystem(tmp_path, npm_servers, tmp_path / "notes.txt", True)
    assert inside.output == "in the workspace\n"  # it works where it may look
    got = await read_through_filesystem(tmp_path, npm_servers, canary, True)
    assert "mcp-canary-7d1f" not in got.output + (got.error or "")
    assert got.status.value == "error" and "ENOENT" in got.output, got


async def test_without_the_sandbox_the_same_read_gets_the_canary(
    tmp_path: Path, npm_servers: Path, canary: Path
) -> None:
    got = await read_through_filesystem(tmp_path, npm_servers, canary, False)
    assert got.output == "mcp-canary-7d1f\n"  # the control: the test above can see a leak
