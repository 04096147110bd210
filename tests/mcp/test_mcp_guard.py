"""Who may add an MCP server, and what one can do once started. Only the user file (and an
ACP client) names servers: a repository's `.agent-lsp/config.toml` — trusted or not — and the
editor's settings are ignored with a warning, and no process starts (the server would leave a
marker file). A started server runs confined: no network unless its `network` says so, none of
agent-lsp's secrets in its environment, nothing written outside the workspace, and a `.envrc`
it plants in the workspace removed after the call."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from agent_lsp.config.settings import load_settings
from agent_lsp.improve.patch import ConfigChange, ImprovementPatch, refusals
from agent_lsp.messages import ToolResult
from agent_lsp.project.workspace import Workspace
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from agent_lsp.tools.mcp_tools import McpCallArgs
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.mcp.conftest import TINY, require_sandbox, session_with, tiny
from tests.test_agent import make_session

pytestmark = pytest.mark.timeout(120)


def server_table(marker: Path) -> str:
    return (
        "[mcp.servers.planted]\n"
        f"command = [{str(sys.executable)!r}, {str(TINY)!r}, {str(marker)!r}]\n"
        'allow = ["write"]\n'
    ).replace("'", '"')


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
async def test_a_repository_config_cannot_add_a_server_trusted_or_not(
    tmp_path: Path, fake_openai: FakeOpenAIServer, trusted: bool
) -> None:
    root = tmp_path / "repo"
    (root / ".agent-lsp").mkdir(parents=True)
    marker = tmp_path / "started.txt"
    (root / ".agent-lsp/config.toml").write_text(server_table(marker))
    user = tmp_path / "user.toml"
    user.write_text(f'[model]\nbaseUrl = "{fake_openai.base_url}"\nname = "fake"\n')
    loaded = load_settings(root, user_config=user, trusted=trusted, environ={})
    (warning,) = [w for w in loaded.warnings if "mcp" in w]
    assert warning == (
        f"project config {root / '.agent-lsp/config.toml'}: ignored [mcp]: MCP servers come "
        "only from your user config (~/.config/agent-lsp/config.toml) or an ACP client's "
        "session/new, never from here; nothing of it was started"
    )
    assert loaded.settings.mcp.servers == {}
    fake_openai.script(Reply("Nothing to do."))
    session = make_session(root, fake_openai.base_url, mcp=loaded.settings.mcp.model_dump())
    try:
        await session.run_task(Task(kind=TaskKind.TASK, instruction="hi"), RecordingChannel())
    finally:
        await session.aclose()
    assert not marker.exists()
    assert "mcp_tools" not in str(fake_openai.requests[0].get("tools"))


async def test_the_same_table_in_the_user_file_starts_the_server(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    """The control of the test above: the marker is what a started server leaves."""
    root = tmp_path / "repo"
    root.mkdir()
    marker = root / "started.txt"
    user = tmp_path / "user.toml"
    user.write_text(server_table(marker))
    loaded = load_settings(root, user_config=user, environ={})
    assert [w for w in loaded.warnings if "mcp" in w] == []
    fake_openai.script(Reply("Nothing to do."))
    session = make_session(root, fake_openai.base_url, mcp=loaded.settings.mcp.model_dump())
    try:
        await session.run_task(Task(kind=TaskKind.TASK, instruction="hi"), RecordingChannel())
    finally:
        await session.aclose()
    assert marker.read_text() == "started\n"


def test_editor_settings_and_improvements_cannot_add_a_server(tmp_path: Path) -> None:
    options = {"mcp": {"servers": {"x": {"command": ["touch", str(tmp_path / "m")]}}}}
    loaded = load_settings(tmp_path, editor_options=options, user_config=tmp_path / "none.toml")
    assert loaded.settings.mcp.servers == {}
    assert any(w.startswith("editor settings: ignored [mcp]: ") for w in loaded.warnings)
    later = load_settings(
        tmp_path, editor_updates=options, user_config=tmp_path / "none.toml", trusted=True
    )
    assert later.settings.mcp.servers == {}
    patch = ImprovementPatch(
        summary="add a server",
        config=[ConfigChange(key="mcp.clientNetwork", value=True)],
    )
    assert refusals(patch, loaded.settings) == [
        "mcp.clientNetwork: refused: MCP servers come only from your user config or an ACP client"
    ]


def test_server_names_and_environment_keep_their_spelling(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(
        '[mcp.servers.my_docs]\ncommand = ["x"]\nenv = { GITHUB_TOKEN = "t", api_base = "u" }\n'
    )
    loaded = load_settings(tmp_path, user_config=user, environ={})
    assert loaded.warnings == []
    server = loaded.settings.mcp.servers["my_docs"]
    assert server.env == {"GITHUB_TOKEN": "t", "api_base": "u"}
    assert "GITHUB_TOKEN" not in str(loaded.settings.model_dump())  # never dumped


async def call_tiny(root: Path, tool: str, arguments: dict[str, Any], **server: Any) -> ToolResult:
    session: Session = session_with(root, "http://127.0.0.1:9/v1", {"tiny": tiny(**server)})
    channel = RecordingChannel()
    try:
        found = {t.name: t for t in session.tools(Workspace(root, channel), channel)}
        return await found["mcp_call"].run(
            McpCallArgs(server="tiny", tool=tool, arguments=arguments)
        )
    finally:
        await session.aclose()


@pytest.mark.parametrize("network", [False, True])
async def test_the_network_only_when_the_server_says_so(
    tmp_path: Path, fake_openai: FakeOpenAIServer, network: bool
) -> None:
    require_sandbox()
    port = urlparse(fake_openai.base_url).port
    got = await call_tiny(
        tmp_path,
        "connect",
        {"host": "127.0.0.1", "port": port},
        allow=["connect"],
        network=network,
    )
    assert (got.output == "connected") is network, got


async def test_no_secret_of_agent_lsp_reaches_a_server_only_its_own_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-agent-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-agent-secret")
    allow = {"allow": ["env"], "env": {"DOCS_TOKEN": "given-to-it"}}
    assert (await call_tiny(tmp_path, "env", {"name": "OPENAI_API_KEY"}, **allow)).output == "unset"
    assert (await call_tiny(tmp_path, "env", {"name": "GITHUB_TOKEN"}, **allow)).output == "unset"
    given = await call_tiny(tmp_path, "env", {"name": "DOCS_TOKEN"}, **allow)
    assert given.output == "given-to-it"


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp (the sandbox's /tmp is its own)."""
    folder = Path(tempfile.mkdtemp(prefix="agent-lsp-mcp-", dir="/var/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_a_server_writes_nothing_outside_the_workspace_and_no_envrc_in_it(
    tmp_path: Path, elsewhere: Path
) -> None:
    require_sandbox()
    outside = elsewhere / "planted.txt"
    got = await call_tiny(tmp_path, "write", {"path": str(outside), "text": "x"}, allow=["write"])
    assert got.status.value == "error" and got.error == "write reported an error", got
    assert not outside.exists()  # read-only there: the sandbox binds only the workspace
    inside = await call_tiny(
        tmp_path, "write", {"path": str(tmp_path / "ok.txt"), "text": "y"}, allow=["write"]
    )
    assert inside.status.value == "success" and (tmp_path / "ok.txt").read_text() == "y"
    top = await call_tiny(
        tmp_path, "write", {"path": str(tmp_path / ".envrc"), "text": "curl x|sh"}, allow=["write"]
    )
    assert top.status.value == "error" and not (tmp_path / ".envrc").exists(), top  # read-only
    (tmp_path / "pkg").mkdir()
    planted = await call_tiny(
        tmp_path, "write", {"path": str(tmp_path / "pkg/.envrc"), "text": "x"}, allow=["write"]
    )
    assert not (tmp_path / "pkg/.envrc").exists()
    assert "[agent-lsp: removed pkg/.envrc: the agent may not create git" in planted.output, planted


async def test_without_a_sandbox_the_user_is_told_the_server_runs_unconfined(
    tmp_path: Path,
) -> None:
    session = session_with(
        tmp_path, "http://127.0.0.1:9/v1", {"tiny": tiny()}, sandbox={"enabled": False}
    )
    channel = RecordingChannel()
    try:
        await session.start_mcp(channel)
        await session.start_mcp(channel)  # said once
    finally:
        await session.aclose()
    assert [e.message for e in channel.events] == [
        "agent-lsp: MCP server tiny runs without an OS sandbox (the sandbox is turned off "
        "(sandbox.enabled)), with your permissions; each of its tool calls asks unless you "
        "allowed it"
    ]
