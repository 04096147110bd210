"""`agent-lsp acp` from outside, as clients drive it in ways the main tests do not: two sessions
on two projects at once, a prompt with resource links and embedded resources (an image refused,
no modes declared), a cancel while a permission request waits, MCP servers that cannot start,
a unicode folder and a prompt no window holds, and team mode (its plan streamed)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    McpServerStdio,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from agent_lsp.demo import copy_sample
from tests.acp.test_acp import COMMAND, Recorder, acp_agent
from tests.conftest import FIX
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script, tool_messages
from tests.team import conftest as team
from tests.team.conftest import AREA, COMMANDER, PERIMETER, TASK
from tests.team.helpers import count, script_feature

pytestmark = pytest.mark.timeout(180)
team_project = team.shapes  # the team tests' two-module project, as fixture `team_project`


class BySession(Recorder):
    """A Recorder that keeps each session's updates apart."""

    def __init__(self) -> None:
        super().__init__()
        self.by_session: dict[str, list[Any]] = {}

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.by_session.setdefault(session_id, []).append(update)
        await super().session_update(session_id, update)


def words(updates: list[Any]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContentBlock)
    )


async def test_two_sessions_on_two_projects_run_at_once_in_one_process(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    other = copy_sample(tmp_path / "other")
    fake_openai.script_for("FIRST-TASK", *fix_average_script())
    fake_openai.script_for("SECOND-TASK", *fix_average_script())
    client = BySession()
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        a = await conn.new_session(cwd=str(project), mcp_servers=[])
        b = await conn.new_session(cwd=str(other), mcp_servers=[])
        assert a.session_id != b.session_id
        done = await asyncio.gather(
            conn.prompt(session_id=a.session_id, prompt=[text_block("FIRST-TASK fix")]),
            conn.prompt(session_id=b.session_id, prompt=[text_block("SECOND-TASK fix")]),
        )
    assert [d.stop_reason for d in done] == ["end_turn", "end_turn"]
    assert (project / "calc.py").read_text().count(FIX) == 1
    assert (other / "calc.py").read_text().count(FIX) == 1
    said_a, said_b = words(client.by_session[a.session_id]), words(client.by_session[b.session_id])
    assert "started: FIRST-TASK" in said_a and "SECOND-TASK" not in said_a, said_a
    assert "started: SECOND-TASK" in said_b and "FIRST-TASK" not in said_b, said_b


async def test_a_prompt_with_a_resource_link_and_an_embedded_resource(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.default_reply = Reply("Looked.")
    client = Recorder()
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        uri = (project / "calc.py").resolve().as_uri()
        link = ResourceContentBlock(type="resource_link", name="calc.py", uri=uri)
        embedded = EmbeddedResourceContentBlock(
            type="resource", resource=TextResourceContents(uri=uri, text="EMBEDDED TEXT")
        )
        done = await conn.prompt(
            session_id=new.session_id, prompt=[text_block("look at"), link, embedded]
        )
        assert done.stop_reason == "end_turn"
        image = ImageContentBlock(type="image", data="AAAA", mime_type="image/png")
        with pytest.raises(RequestError) as refused:  # not declared in the capabilities
            await conn.prompt(session_id=new.session_id, prompt=[text_block("see"), image])
        assert refused.value.code == -32602
        assert "not supported in a prompt: image content" in str(refused.value)
        with pytest.raises(RequestError) as no_modes:  # no modes declared
            await conn.set_session_mode(session_id=new.session_id, mode_id="code")
        assert no_modes.value.code == -32601
    first = next(m["content"] for m in fake_openai.requests[0]["messages"] if m["role"] == "user")
    # the project's file by its path, as the agent's tools name it (not a file: address)
    assert "[calc.py](calc.py)" in first and "calc.py:\nEMBEDDED TEXT" in first, first
    assert "file:" not in first


async def test_a_cancel_while_a_permission_request_waits_ends_the_prompt_cancelled(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": COMMAND})]), Reply("Stopped.")
    )
    asked = asyncio.Event()

    class NeverAnswers(Recorder):
        async def request_permission(  # pyright: ignore[reportIncompatibleMethodOverride]
            self, options: list[Any], session_id: str, tool_call: Any, **_: Any
        ) -> Any:
            asked.set()
            await asyncio.sleep(3600)

    client = NeverAnswers()
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=new.session_id, prompt=[text_block("tidy")])
        )
        await asyncio.wait_for(asked.wait(), 60)
        await conn.cancel(session_id=new.session_id)
        done = await asyncio.wait_for(prompt, 30)
        assert done.stop_reason == "cancelled"
        fake_openai.script(Reply("Nothing."), Reply("Nothing."))
        again = await asyncio.wait_for(
            conn.prompt(session_id=new.session_id, prompt=[text_block("again")]), 60
        )
        assert again.stop_reason == "end_turn"
    assert not (project / "made.txt").exists()


async def test_mcp_servers_that_cannot_start_are_said_and_the_task_goes_on(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("mcp_tools", {})]),
        Reply("done."),
        Reply("done."),
    )
    missing = McpServerStdio(name="missing", command="/no/such/program", args=[], env=[])
    exits = McpServerStdio(
        name="exits", command=sys.executable, args=["-c", "raise SystemExit(3)"], env=[]
    )
    client = Recorder()
    async with acp_agent(client, server_env, tmp_path) as (conn, stderr):
        new = await conn.new_session(cwd=str(project), mcp_servers=[missing, exits])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("use mcp")])
    assert done.stop_reason == "end_turn"
    said = client.said()
    assert "MCP server missing did not start: /no/such/program: no such program" in said, said
    assert "MCP server exits did not start" in said, said
    (result,) = tool_messages(fake_openai.requests[1])
    assert "MCP server missing did not start" in result, result
    assert "Traceback" not in stderr.read_text()


async def test_a_unicode_folder_and_a_prompt_too_long_for_the_window(
    fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    folder = copy_sample(tmp_path / "プロジェクト ü é")
    fake_openai.script(*fix_average_script())
    client = Recorder(writes=True)
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(folder), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("fix it é")])
        assert done.stop_reason == "end_turn"
        long = "make it right. " * 200_000  # ~750k tokens: no window holds it
        cut = await conn.prompt(session_id=new.session_id, prompt=[text_block(long)])
        assert cut.stop_reason == "end_turn"
    assert (folder / "calc.py").read_text().count(FIX) == 1
    path = str(folder.resolve() / "calc.py")
    assert [p for p, _ in client.written] == [path]
    assert "■ error after" in client.said() and "context" in client.said()


async def test_a_prompt_runs_the_team_when_team_mode_is_on_and_streams_its_plan(
    team_project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    """`team.enabled`: a prompt is a team task, as `run` and `agentLsp.runTask` make it; the
    client is shown its plan (`session/update` plan: each step, its status as it goes)."""
    (team_project / ".agent-lsp").mkdir()
    (team_project / ".agent-lsp" / "config.toml").write_text("[team]\nenabled = true\n")
    script_feature(fake_openai)
    client = Recorder()
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(team_project), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block(TASK)])
    assert done.stop_reason == "end_turn", client.said()
    assert (team_project / "area.py").read_text() == AREA
    assert (team_project / "perimeter.py").read_text() == PERIMETER
    assert count(fake_openai, COMMANDER) == 1  # the team's roles were asked
    plans = [
        [(e.content, e.status) for e in u.entries]
        for u in client.updates
        if isinstance(u, AgentPlanUpdate)
    ]
    assert plans, client.said()
    assert plans[0] == [
        ("s1: implement square_area", "pending"),
        ("s2: implement square_perimeter", "pending"),
    ], plans
    assert plans[-1] == [
        ("s1: implement square_area", "completed"),
        ("s2: implement square_perimeter", "completed"),
    ], plans
    assert any(("s1: implement square_area", "in_progress") in p for p in plans), plans
    assert "■ completed" in client.said(), client.said()
