"""Names a question shows and a rule matches: a server's tool names are checked (the MCP spec's
`[A-Za-z0-9_.-]{1,64}`; others are left out and said once), a server name cannot make
`mcp__<server>__<tool>` fit two servers' tools (no `__`, no trailing `_`: refused in the user
file and from an ACP client), "Always allow" remembers the (server, tool) pair, and letters
that look blank are escaped in a question."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_lsp.acp.agent import Live, _join_mcp  # pyright: ignore[reportPrivateUsage]
from agent_lsp.config.settings import load_settings
from agent_lsp.messages import EventKind
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.policy import ALLOW_ONCE, ALWAYS_ALLOW, CommandPolicy, visible
from agent_lsp.tools.mcp_tools import McpCallArgs, McpToolsArgs
from tests.fakes.channel import RecordingChannel
from tests.mcp.conftest import session_with

pytestmark = pytest.mark.timeout(120)

ODD = Path(__file__).with_name("odd_names_server.py")


async def test_tools_with_names_no_tool_should_have_are_left_out_and_said_once(
    tmp_path: Path,
) -> None:
    from tests.mcp.odd_names_server import PADDED

    session = session_with(
        tmp_path, "http://127.0.0.1:9/v1", {"odd": {"command": [sys.executable, str(ODD)]}}
    )
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE]
    try:
        await session.start_mcp(channel)
        await session.start_mcp(channel)  # said once
        found = {t.name: t for t in session.tools(Workspace(tmp_path, channel), channel)}
        listed = await found["mcp_tools"].run(McpToolsArgs(server="odd", query=None))
        padded = await found["mcp_call"].run(McpCallArgs(server="odd", tool=PADDED))
        double = await found["mcp_call"].run(McpCallArgs(server="odd", tool="b__c"))
    finally:
        await session.aclose()
    said = [e.message for e in channel.events if e.kind is EventKind.MESSAGE]
    assert said == [
        "agent-lsp: MCP server odd: 1 tool(s) left out: a tool's name must be 1 to 64 of "
        "A-Z a-z 0-9 _ . -"
    ]
    assert '"tool": "b__c"' in listed.output and '"tool": "fine.name-1"' in listed.output
    assert "\u3164" not in listed.output and "lookup" not in listed.output
    assert "odd: 1 tool(s) left out" in listed.output
    assert padded.status.value == "error" and "odd has no tool" in (padded.error or "")
    assert double.output == "b__c ran"
    assert len(channel.questions) == 1 and "b__c" in channel.questions[0]


@pytest.mark.parametrize("name", ["a__b", "docs_", "a b", "x" * 41])
def test_a_server_name_that_would_blur_a_rule_is_refused_in_the_user_file(
    tmp_path: Path, name: str
) -> None:
    user = tmp_path / "user.toml"
    user.write_text(f'[mcp.servers."{name}"]\ncommand = ["x"]\n[mcp.servers.a]\ncommand = ["y"]\n')
    loaded = load_settings(tmp_path, user_config=user, environ={})
    assert list(loaded.settings.mcp.servers) == ["a"]
    (warning,) = loaded.warnings
    assert f"mcp.servers.{name}" in warning, warning
    if "__" in name or name.endswith("_"):
        assert "a server name may not hold '__' nor end with '_'" in warning, warning


def test_a_server_name_that_would_blur_a_rule_is_refused_from_an_acp_client(
    tmp_path: Path,
) -> None:
    from acp.schema import McpServerStdio

    session = session_with(tmp_path, "http://127.0.0.1:9/v1", {})
    live = Live(session, RecordingChannel())  # pyright: ignore[reportArgumentType]
    servers = [
        McpServerStdio(name="a__b", command=sys.executable, args=[], env=[]),
        McpServerStdio(name="tiny", command=sys.executable, args=[], env=[]),
    ]
    _join_mcp(live, servers)
    assert [s.name for s in session.mcp_specs()] == ["tiny"]
    assert live.warnings == [
        "MCP server 'a__b' not connected: a server name may not hold '__' nor end with '_' "
        "(a rule names a tool mcp__<server>__<tool>, which must name one server's tool)"
    ]


async def test_always_allow_remembers_the_server_and_the_tool_apart(tmp_path: Path) -> None:
    """`mcp__a__b__c` is server `a`'s tool `b__c` and server `a__b`'s tool `c` alike: the
    answer is kept by the pair, so one never answers for the other."""
    channel = RecordingChannel()
    channel.answers = [ALWAYS_ALLOW, None]
    policy = CommandPolicy(channel, set())
    policy.engine_for(tmp_path)
    first = await policy.check_mcp("a", "b__c", "{}", allowed=False)
    again = await policy.check_mcp("a", "b__c", "{}", allowed=False)
    other = await policy.check_mcp("a__b", "c", "{}", allowed=False)
    assert first.allowed and again.allowed and again.answer == ALWAYS_ALLOW
    assert not other.allowed and len(channel.questions) == 2


@pytest.mark.parametrize(
    "blank", ["\u3164", "\u115f", "\u1160", "\uffa0", "\u2800", "\u034f", "\ufe0f", "\u3000"]
)
def test_letters_that_look_blank_are_escaped_in_a_question(blank: str) -> None:
    escaped = f"\\u{ord(blank):04x}"
    assert visible(f"search{blank * 3}allowed") == f"search{escaped * 3}allowed"
    assert visible("café naïve ✓ 日本") == "café naïve ✓ 日本"
