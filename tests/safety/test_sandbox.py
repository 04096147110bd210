"""The OS sandbox with the real bubblewrap: writes outside the workspace and network access
fail, secrets are hidden, git hooks and the policy stay read-only, the agent's environment is
out of reach; where bwrap cannot run, the policy alone applies and the user is told once."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters import PosixShell
from adapters.results import CommandResult
from agent_lsp.messages import ToolCall
from agent_lsp.permissions import ALLOW_ONCE, CommandPolicy
from agent_lsp.safety.sandbox import Sandbox, probe, scrub_env
from agent_lsp.tools import RunCommandTool, ToolBox
from agent_lsp.workspace import Workspace
from tests.conftest import which_or_skip
from tests.fakes.channel import RecordingChannel
from tests.safety.conftest import Layout, make_layout


def require_sandbox() -> Sandbox:
    which_or_skip("bwrap")
    status = probe(refresh=True)
    if not status.available:
        if os.environ.get("CI"):
            pytest.fail(f"bwrap is installed but cannot run here: {status.reason}")
        pytest.skip(status.reason)
    return Sandbox()


@pytest.fixture
def outside() -> Iterator[Layout]:
    """A home and a workspace outside /tmp (the sandbox gets a private /tmp)."""
    base = Path(tempfile.mkdtemp(prefix="agent-lsp-sandbox-", dir="/var/tmp"))
    try:
        yield make_layout(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def run(
    sandbox: Sandbox, layout: Layout, script: str, network: bool = False, secrets: bool = False
) -> CommandResult:
    shell = PosixShell()
    env = scrub_env(os.environ)
    argv = sandbox.wrap(shell.script_argv(script, env), layout.ws, layout.ws, network, secrets)
    assert argv is not None
    return await shell.run(argv, cwd=layout.ws, timeout=20, env=env)


async def test_writes_outside_the_workspace_fail(outside: Layout) -> None:
    sandbox = require_sandbox()
    sandbox.home = outside.home
    inside = await run(sandbox, outside, "echo ok > made.txt && cat made.txt")
    assert inside.exit_code == 0 and (outside.ws / "made.txt").read_text() == "ok\n"
    for target in [
        outside.home / "x.txt",
        outside.home / ".bashrc",
        Path("/var/tmp/agent-lsp-escape"),
    ]:
        result = await run(sandbox, outside, f"echo evil >> {target}")
        assert result.exit_code != 0 and "Read-only file system" in result.output, result.output
    assert (outside.home / ".bashrc").read_text() == "# rc\n"
    assert not (outside.home / "x.txt").exists() and not Path("/var/tmp/agent-lsp-escape").exists()
    escaped = await run(sandbox, outside, "mount -o remount,rw / 2>&1; touch /etc/agent-lsp-x")
    assert escaped.exit_code != 0 and not Path("/etc/agent-lsp-x").exists()


async def test_secrets_git_hooks_and_the_policy_stay_out_of_reach(outside: Layout) -> None:
    sandbox = require_sandbox()
    sandbox.home = outside.home
    key = await run(
        sandbox, outside, f"cat {outside.home}/.ssh/id_rsa {outside.home}/.aws/credentials"
    )
    assert key.exit_code != 0 and "PRIVATE KEY" not in key.output and "aws_secret" not in key.output
    notes = await run(sandbox, outside, f"cat {outside.home}/notes.txt")
    assert notes.output == "home notes\n"  # the rest of the system stays readable
    env_file = await run(sandbox, outside, "cat .env keylink; echo end")
    assert "sk-project" not in env_file.output and "PRIVATE KEY" not in env_file.output
    shown = await run(sandbox, outside, "cat .env", secrets=True)  # the user allowed it
    assert shown.output == "API_KEY=sk-project\n"
    for path in [".git/hooks/pre-commit", ".git/config", ".agent-lsp/policy.toml"]:
        result = await run(sandbox, outside, f"echo evil >> {path}")
        assert result.exit_code != 0, path
    assert (outside.ws / ".git/config").read_text() == "[core]\n"
    assert not (outside.ws / ".git/hooks/pre-commit").exists()


async def test_the_agents_environment_is_not_visible(
    outside: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = require_sandbox()
    monkeypatch.setenv("AGENT_LSP_API_KEY", "sk-agent-secret-123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret-456")
    result = await run(sandbox, outside, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
    assert "sk-agent-secret-123" not in result.output and "ghp-secret-456" not in result.output
    assert "PATH=" in result.output


async def test_network_fails_unless_allowed(outside: Layout) -> None:
    sandbox = require_sandbox()
    connected: list[bool] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.append(True)
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    probe_py = (
        f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('up')"
    )
    try:
        for script in [f'python3 -c "{probe_py}"', f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo up"]:
            blocked = await run(sandbox, outside, script)
            assert blocked.exit_code != 0 and "up" not in blocked.output, blocked.output
            allowed = await run(sandbox, outside, script, network=True)
            assert allowed.exit_code == 0 and "up" in allowed.output, allowed.output
    finally:
        server.close()
        await server.wait_closed()
    assert len(connected) == 2  # only the runs with the network reached the server


async def test_timeouts_kill_the_whole_sandbox(outside: Layout) -> None:
    sandbox = require_sandbox()
    shell = PosixShell()
    argv = sandbox.wrap(shell.script_argv("sleep 31.5 & sleep 31.5"), outside.ws, outside.ws)
    assert argv is not None
    result = await shell.run(argv, cwd=outside.ws, timeout=1)
    assert result.timed_out and result.duration < 10
    await asyncio.sleep(0.5)
    ps = await shell.run(["ps", "-eo", "args"], cwd=outside.ws, timeout=10)
    assert "sleep 31.5" not in ps.output


async def test_run_command_goes_through_the_sandbox(outside: Layout) -> None:
    sandbox = require_sandbox()
    sandbox.home = outside.home
    channel = RecordingChannel()
    gate = CommandPolicy(channel, set(), engine=outside.policy("L2"))
    ws = Workspace(outside.ws, channel, gate)
    box = ToolBox([RunCommandTool(ws, PosixShell(), gate, 20, sandbox)], 30, 60)

    async def call(command: str) -> tuple[int | None, str, dict[str, object]]:
        r = await box.call(
            ToolCall(id="1", name="run_command", arguments=json.dumps({"command": command}))
        )
        return r.metadata.get("exit_code"), r.output, r.metadata  # type: ignore[return-value]

    code, output, meta = await call("ls src")
    assert (code, output) == (0, "app.py\n") and str(meta["sandbox"]).startswith("bwrap")
    channel.answers = [ALLOW_ONCE]  # the user allows a write outside; the OS still refuses it
    code, output, _ = await call(f"touch {outside.home}/approved.txt")
    assert code != 0 and "Read-only file system" in output
    assert not (outside.home / "approved.txt").exists()


async def test_without_namespaces_the_policy_applies_and_the_user_is_told_once(
    tmp_path: Path, layout: Layout
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox = Sandbox(bwrap=str(fake))
    status = sandbox.status()
    assert not status.available and "No permissions to create new namespace" in status.reason
    assert sandbox.wrap(["true"], layout.ws, layout.ws) is None
    channel = RecordingChannel()
    gate = CommandPolicy(channel, set(), engine=layout.policy("L2"))
    box = ToolBox(
        [RunCommandTool(Workspace(layout.ws, channel, gate), PosixShell(), gate, 10, sandbox)],
        30,
        60,
    )
    for _ in range(2):
        r = await box.call(ToolCall(id="1", name="run_command", arguments='{"command": "ls src"}'))
        assert r.output == "app.py\n" and r.metadata["sandbox"] == "policy only"
    notices = [e.message for e in channel.events if "sandbox" in e.message]
    assert len(notices) == 1 and "commands are limited by the policy only" in notices[0]


def test_the_argv_uses_every_guard(tmp_path: Path, layout: Layout) -> None:
    fake = tmp_path / "bwrap-ok"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    sandbox = Sandbox(bwrap=str(fake), home=layout.home)
    argv = sandbox.wrap(["bash", "-c", "x"], layout.ws, layout.ws / "src")
    assert argv is not None
    text = " ".join(argv)
    assert argv[:6] == [
        str(fake),
        "--unshare-all",
        "--unshare-user",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
    ]
    assert "--share-net" not in argv and "--new-session" in argv
    assert f"--bind {layout.ws} {layout.ws}" in text
    assert f"--ro-bind {layout.ws}/.git/hooks {layout.ws}/.git/hooks" in text
    assert f"--ro-bind {layout.ws}/.agent-lsp {layout.ws}/.agent-lsp" in text
    assert (
        f"--tmpfs {layout.home}/.ssh" in text
        and f"--ro-bind /dev/null {layout.home}/.netrc" in text
    )
    assert f"--ro-bind /dev/null {layout.ws}/.env " in text
    assert argv[argv.index("--chdir") + 1] == str(layout.ws / "src")
    assert argv[-3:] == ["bash", "-c", "x"]
    shown = sandbox.wrap(["x"], layout.ws, layout.ws, network=True, show_secrets=True)
    assert (
        shown is not None and "--share-net" in shown and f"{layout.ws}/.env" not in " ".join(shown)
    )
    assert Sandbox(enabled=False).wrap(["x"], layout.ws, layout.ws) is None


def test_scrub_env() -> None:
    env = scrub_env(
        {
            "PATH": "/bin",
            "HOME": "/h",
            "OPENAI_API_KEY": "k",
            "AGENT_LSP_MODEL": "m",
            "GH_TOKEN": "t",
        }
        | {"AWS_SECRET_ACCESS_KEY": "s", "BASH_ENV": "/x", "DB_PASSWORD": "p", "LANG": "C"}
    )
    assert env == {"PATH": "/bin", "HOME": "/h", "LANG": "C"}
