"""MCP tools through the real agent loop: the real `openai` client against the scripted fake
model, a real MCP server (tests/mcp/tiny_server.py) started in the sandbox where there is one.
The model first sees only the servers' tool names and first lines, asks `mcp_tools` for a
schema, then calls the tool with `mcp_call`; every call is asked (a no refuses it, no answer
too) unless the user's `allow` list names the tool; a large result comes back cut; a server
that cannot start is one line to the model and the user."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.messages import EventKind, TaskStatus
from agent_lsp.safety.policy import ALLOW_ONCE, DENY
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.mcp.conftest import session_with, tiny
from tests.scripts import tool_messages

pytestmark = pytest.mark.timeout(120)

TASK = Task(kind=TaskKind.TASK, instruction="add 2 and 3 with the tiny server")


def tools_sent(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in request.get("tools") or []}


def results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m) for m in tool_messages(request)]


def call(server: str, tool: str, arguments: dict[str, Any]) -> Reply:
    return Reply(
        tool_calls=[ToolCall("mcp_call", {"server": server, "tool": tool, "arguments": arguments})]
    )


async def run(
    root: Path, fake: FakeOpenAIServer, servers: dict[str, Any], answers: list[str | None]
) -> tuple[RecordingChannel, Any]:
    channel = RecordingChannel()
    channel.answers = list(answers)
    session = session_with(root, fake.base_url, servers)
    try:
        outcome = await session.run_task(TASK, channel)
    finally:
        await session.aclose()
    return channel, outcome


async def test_names_first_the_schema_on_demand_then_the_call_asked_and_run(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("mcp_tools", {"server": "tiny", "query": "add"})]),
        call("tiny", "add", {"a": 2, "b": 3}),
        Reply("2 + 3 = 5."),
    )
    channel, outcome = await run(tmp_path, fake_openai, {"tiny": tiny()}, [ALLOW_ONCE])
    assert outcome.status is TaskStatus.COMPLETED, outcome

    first = tools_sent(fake_openai.requests[0])
    assert set(first) >= {"mcp_tools", "mcp_call", "read_file", "run_command"}
    assert list(first)[-2:] == ["mcp_tools", "mcp_call"]  # the prefix stays the contract's
    listing = first["mcp_tools"]["description"]
    assert "tiny:\n  add: Add two whole numbers." in listing
    assert "  lines: Print `count` numbered lines." in listing
    # deferred: no tool's schema, nor the rest of its description, before it is asked for
    assert "second paragraph" not in json.dumps(first)
    assert '"integer"' not in json.dumps(first["mcp_tools"]) + json.dumps(first["mcp_call"])
    # the same tools in every request: the prompt cache keeps its prefix
    assert all(tools_sent(r) == first for r in fake_openai.requests)

    found, ran = results(fake_openai.requests[-1])
    schema = json.loads(found["output"])
    assert schema["tool"] == "add" and "second paragraph" in schema["description"]
    assert schema["arguments"]["properties"]["a"]["type"] == "integer"
    assert ran["status"] == "success" and ran["output"] == "5"
    assert channel.questions == [
        'agent-lsp wants to call the MCP tool add of server tiny with {"a": 2, "b": 3} — '
        "mcp__tiny__add: an MCP tool (its server's hints are not trusted)"
    ]
    assert channel.options == [[ALLOW_ONCE, "Always allow", DENY]]


async def test_a_no_refuses_the_call_and_a_read_only_hint_is_not_trusted(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    marker = tmp_path / "written.txt"
    fake_openai.script(
        call("tiny", "write", {"path": str(marker), "text": "x"}),
        call("tiny", "write", {"path": str(marker), "text": "y"}),
        Reply("The user said no."),
    )
    channel, _ = await run(tmp_path, fake_openai, {"tiny": tiny()}, [DENY])  # then no answer
    refused, unanswered = results(fake_openai.requests[-1])
    assert refused["status"] == unanswered["status"] == "error"
    assert refused["error"] == "not run: user: denied. Do without this tool or ask the user."
    assert unanswered["error"].startswith("not run: no answer (denied).")
    assert len(channel.questions) == 2  # `read_only_hint=True` asked all the same
    assert not marker.exists()


async def test_the_allow_list_runs_a_tool_without_asking_and_only_that_tool(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        call("tiny", "add", {"a": 40, "b": 2}),
        call("tiny", "env", {"name": "PATH"}),
        Reply("42."),
    )
    channel, _ = await run(tmp_path, fake_openai, {"tiny": tiny(allow=["add"])}, [])
    added, env = results(fake_openai.requests[-1])
    assert added["status"] == "success" and added["output"] == "42"
    assert added["metadata"]["decided_by"] == "policy: your allow list for the MCP server tiny"
    assert env["status"] == "error"  # not on the list: asked, and nobody answered
    assert [q.split(" with ")[0] for q in channel.questions] == [
        "agent-lsp wants to call the MCP tool env of server tiny"
    ]


async def test_a_large_result_is_cut_like_any_tool_output_and_kept_whole(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(call("tiny", "lines", {"count": 1000}), Reply("Many lines."))
    await run(tmp_path, fake_openai, {"tiny": tiny(allow=["lines"])}, [])
    (got,) = results(fake_openai.requests[-1])
    out = got["output"]
    assert out.startswith("line 1\nline 2\n") and out.endswith("line 999\nline 1000")
    assert "[... 700 lines omitted; full output: .agent-lsp/logs/outputs/" in out
    assert "line 500\n" not in out
    kept = next((tmp_path / ".agent-lsp/logs/outputs").glob("*-mcp_call.txt"))
    assert kept.read_text().count("\n") == 999


async def test_arguments_that_break_the_schema_are_refused_before_anyone_is_asked(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        call("tiny", "add", {"a": "two"}),
        call("tiny", "nope", {}),
        call("elsewhere", "add", {}),
        Reply("I give up."),
    )
    channel, _ = await run(tmp_path, fake_openai, {"tiny": tiny()}, [])
    typed, unknown, server = results(fake_openai.requests[-1])
    assert typed["error"].startswith("invalid arguments for tiny add: ")
    assert "'b' is a required property" in typed["error"]
    assert "a: 'two' is not of type 'integer'" in typed["error"]
    assert '"required": ["a", "b"]' in typed["error"]  # the schema, to try again
    assert unknown["error"] == (
        "tiny has no tool 'nope' (its tools: add, lines, write, env, connect, read)"
    )
    assert server["error"] == "no MCP server 'elsewhere' (servers: tiny)"
    assert channel.questions == []


async def test_a_server_that_cannot_start_is_one_line_to_the_model_and_the_user(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    broken = {"command": [str(tmp_path / "no-such-server")]}
    fake_openai.script(call("broken", "add", {}), Reply("The server is down."))
    channel, outcome = await run(tmp_path, fake_openai, {"broken": broken, "tiny": tiny()}, [])
    assert outcome.status is TaskStatus.COMPLETED
    said = [e.message for e in channel.events if e.kind is EventKind.MESSAGE]
    down = [m for m in said if "MCP server broken" in m]
    assert len(down) == 1 and "\n" not in down[0], said
    assert down[0].startswith("agent-lsp: MCP server broken did not start: ")
    assert "no-such-server" in down[0]
    listing = tools_sent(fake_openai.requests[0])["mcp_tools"]["description"]
    assert "broken: not available (MCP server broken did not start: " in listing
    assert "tiny:\n  add:" in listing  # the other server is there
    (got,) = results(fake_openai.requests[-1])
    assert got["error"].startswith("MCP server broken did not start: ")
    assert "Traceback" not in json.dumps(got) + " ".join(said)


async def test_every_call_is_in_the_session_log(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(call("tiny", "add", {"a": 1, "b": 1}), Reply("2."))
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE]
    session = session_with(tmp_path, fake_openai.base_url, {"tiny": tiny()})
    await session.run_task(TASK, channel)
    log = session.log_path
    await session.aclose()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = [(r["kind"], r.get("tool") or r.get("event")) for r in records]
    assert ("mcp", "started") in kinds and ("mcp", "stopped") in kinds
    (ran,) = [r for r in records if r["kind"] == "tool_call" and r["tool"] == "mcp_call"]
    assert ran["status"] == "success" and '"tool": "add"' in ran["arguments"]
    (asked,) = [r for r in records if r["kind"] == "decision" and r["tool"] == "mcp_call"]
    assert asked["decision"] == "allowed" and asked["answered_by"] == "user"
    assert asked["command"] == 'mcp__tiny__add {"a": 1, "b": 1}'
