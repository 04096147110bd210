"""A server whose tools change while it runs says so (`notifications/tools/list_changed`): the
next listing asks it again, so the model finds and can call the new tool (before, the list of
its start stood: "growing has no tool second"). Our own small server, through the real SDK."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.policy import ALLOW_ONCE
from agent_lsp.tools.mcp_tools import McpCallArgs, McpToolsArgs
from tests.fakes.channel import RecordingChannel
from tests.mcp.conftest import session_with

pytestmark = pytest.mark.timeout(120)

GROWING = Path(__file__).with_name("growing_server.py")


async def test_a_tool_the_server_adds_is_listed_again_and_called(tmp_path: Path) -> None:
    session = session_with(
        tmp_path, "http://127.0.0.1:9/v1", {"growing": {"command": [sys.executable, str(GROWING)]}}
    )
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE, ALLOW_ONCE]
    try:
        await session.start_mcp(channel)
        found = {t.name: t for t in session.tools(Workspace(tmp_path, channel), channel)}
        before = await found["mcp_tools"].run(McpToolsArgs(server="growing", query=None))
        grown = await found["mcp_call"].run(McpCallArgs(server="growing", tool="grow"))
        after = await found["mcp_tools"].run(McpToolsArgs(server="growing", query=None))
        second = await found["mcp_call"].run(McpCallArgs(server="growing", tool="second"))
    finally:
        await session.aclose()
    assert '"tool": "grow"' in before.output and '"tool": "second"' not in before.output
    assert grown.output == "grown"
    assert '"tool": "grow"' in after.output and '"tool": "second"' in after.output
    assert second.status.value == "success", second.error
    assert second.output == "second ran"
    assert len(channel.questions) == 2 and "second" in channel.questions[1]
    assert not [e for e in channel.events if "fail" in e.message or "not" in e.message]


async def test_a_server_that_will_not_list_again_keeps_its_old_list_and_holds_nothing_up(
    tmp_path: Path,
) -> None:
    session = session_with(
        tmp_path, "http://127.0.0.1:9/v1", {"growing": {"command": [sys.executable, str(GROWING)]}}
    )
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE, ALLOW_ONCE]
    try:
        await session.start_mcp(channel)
        host = session.mcp
        assert host is not None
        host.start_timeout = 2.0
        found = {t.name: t for t in session.tools(Workspace(tmp_path, channel), channel)}
        frozen = await found["mcp_call"].run(McpCallArgs(server="growing", tool="freeze"))
        listed = await asyncio.wait_for(
            found["mcp_tools"].run(McpToolsArgs(server="growing", query=None)), 30
        )
        again = await asyncio.wait_for(
            found["mcp_call"].run(McpCallArgs(server="growing", tool="grow")), 30
        )
    finally:
        await session.aclose()
    assert frozen.output == "frozen"
    assert '"tool": "grow"' in listed.output and '"tool": "freeze"' in listed.output
    assert again.output == "grown"  # the old list still serves; the next listing asks again
