"""The OS sandbox with the real bubblewrap: writes outside the workspace and network access
fail; `.git`, `.agent-lsp` and editor settings cannot be changed, renamed or created; the home
is private; secret files are hidden however many files the workspace holds; the agent's
environment (its API key) is out of reach; where bwrap cannot run, the policy fails closed."""

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
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.messages import ToolCall
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.policy import ALLOW_ONCE, CommandPolicy
from agent_lsp.safety.sandbox import Confinement, Sandbox, probe
from agent_lsp.safety.sandbox_env import sandbox_env
from agent_lsp.tools import RunCommandTool
from tests.conftest import which_or_skip
from tests.fakes.channel import RecordingChannel
from tests.safety.conftest import Layout, make_layout


def require_sandbox(home: Path, tmp: Path) -> Sandbox:
    which_or_skip("bwrap")
    status = probe(refresh=True)
    if not status.available:
        if os.environ.get("CI"):
            pytest.fail(f"bwrap is installed but cannot run here: {status.reason}")
        pytest.skip(status.reason)
    return Sandbox(home=home, private_base=tmp / "private-homes")


@pytest.fixture
def outside() -> Iterator[Layout]:
    """A home and a workspace outside /tmp (the sandbox gets a private /tmp)."""
    base = Path(tempfile.mkdtemp(prefix="agent-lsp-sandbox-", dir="/var/tmp"))
    try:
        yield make_layout(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def shell_for(sandbox: Sandbox, layout: Layout, **confinement: object) -> ConfinedShell:
    options: dict[str, object] = {"writable": (layout.ws,), "visible": (layout.ws,)}
    options.update(confinement)
    return ConfinedShell(sandbox, Confinement(**options))  # pyright: ignore[reportArgumentType]


async def run(shell: ConfinedShell, layout: Layout, script: str) -> CommandResult:
    return await shell.run_script(script, cwd=layout.ws, timeout=30)


async def test_writes_outside_the_workspace_fail(outside: Layout) -> None:
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    inside = await run(shell, outside, "echo ok > made.txt && cat made.txt")
    assert inside.exit_code == 0 and (outside.ws / "made.txt").read_text() == "ok\n"
    for target in [Path("/var/tmp/agent-lsp-escape"), Path("/etc/x"), outside.ws.parent / "x"]:
        result = await run(shell, outside, f"echo evil >> {target}")
        assert result.exit_code != 0, result.output
    rc = await run(shell, outside, f"echo evil >> {outside.home}/.bashrc")
    assert rc.exit_code == 0  # the private home takes it ...
    assert (outside.home / ".bashrc").read_text() == "# rc\n"  # ... the user's is untouched
    assert not Path("/var/tmp/agent-lsp-escape").exists() and not Path("/etc/x").exists()
    escaped = await run(shell, outside, "mount -o remount,rw / 2>&1; touch /etc/agent-lsp-x")
    assert escaped.exit_code != 0 and not Path("/etc/agent-lsp-x").exists()


async def test_read_only_commands_cannot_write_the_workspace(outside: Layout) -> None:
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside, writable=())
    result = await run(shell, outside, "echo evil > src/app.py; touch new.txt")
    assert result.exit_code != 0 and "Read-only file system" in result.output
    assert (outside.ws / "src/app.py").read_text() == "def main():\n    return 1\n"
    assert not (outside.ws / "new.txt").exists()


async def test_git_and_the_agent_and_editor_settings_cannot_be_changed(outside: Layout) -> None:
    (outside.ws / ".vscode").mkdir()
    (outside.ws / ".vscode/settings.json").write_text("{}\n")
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    attacks = [
        "mv .git .g",  # the escape seen: rename .git, rebuild it with an fsmonitor
        "rm -rf .git",
        "echo 'gitdir: /tmp/evil' > .git/commondir",
        "git config core.fsmonitor 'env > /var/tmp/canary'",
        "echo x > .git/hooks/pre-commit",
        "echo 'level = 3' >> .agent-lsp/policy.toml",
        "mv .agent-lsp .a",
        'echo \'{"agentLsp.permissionLevel": "L3"}\' > .vscode/settings.json',
        "mv .vscode .v",
    ]
    for attack in attacks:
        result = await run(shell, outside, attack)
        assert result.exit_code != 0, (attack, result.output)
    assert (outside.ws / ".git/config").read_text() == "[core]\n"
    assert not (outside.ws / ".git/commondir").exists()
    assert not (outside.ws / ".git/hooks/pre-commit").exists()
    assert (outside.ws / ".agent-lsp/policy.toml").read_text() == ""
    assert (outside.ws / ".vscode/settings.json").read_text() == "{}\n"
    assert not (outside.ws / ".g").exists() and not (outside.ws / ".v").exists()


async def test_editor_settings_a_command_creates_are_removed(outside: Layout) -> None:
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(shell, outside, "mkdir .idea && echo x > .idea/ws.xml; touch .envrc")
    assert result.exit_code == 126
    assert "removed .envrc, .idea" in result.output
    assert not (outside.ws / ".idea").exists() and not (outside.ws / ".envrc").exists()


async def test_the_home_is_private(outside: Layout) -> None:
    (outside.home / ".npmrc").write_text("//registry/:_authToken=npm-secret\n")
    (outside.home / ".cargo").mkdir()
    (outside.home / ".cargo/credentials.toml").write_text('token = "cargo-secret"\n')
    (outside.home / ".bash_history").write_text("export TOKEN=history-secret\n")
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    files = ".ssh/id_rsa .aws/credentials .npmrc .cargo/credentials.toml .bash_history notes.txt"
    result = await run(shell, outside, f"cd ~ && cat {files}; echo HOME=$HOME; ls -A ~")
    for secret in ["PRIVATE KEY", "aws_secret", "npm-secret", "cargo-secret", "history-secret"]:
        assert secret not in result.output
    assert "home notes" not in result.output  # nothing of the home, not only known secrets
    assert f"HOME={outside.home}\n" in result.output
    system = await run(shell, outside, "head -1 /etc/passwd")
    assert system.exit_code == 0 and system.output.startswith("root:")
    cache = await run(shell, outside, "mkdir -p ~/.cache/x && echo kept > ~/.cache/x/f")
    again = await run(shell, outside, "cat ~/.cache/x/f")
    assert cache.exit_code == 0 and again.output == "kept\n"  # caches persist, privately
    assert not (outside.home / ".cache/x").exists()


async def test_secret_files_are_hidden_in_a_big_workspace(outside: Layout) -> None:
    deep = outside.ws / "data"
    for i in range(200):
        folder = deep / f"d{i:03}"
        folder.mkdir(parents=True)
        for j in range(100):
            (folder / f"f{j}.txt").write_text("x")
    (deep / "d199" / ".env").write_text("TOKEN=deep-secret\n")
    (deep / "d100" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert sum(1 for _ in outside.ws.rglob("*")) > 20_000
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(shell, outside, "cat data/d199/.env data/d100/id_rsa .env; grep -r TOK .")
    assert "deep-secret" not in result.output and "PRIVATE KEY" not in result.output
    assert "sk-project" not in result.output
    (deep / "d005" / ".env.local").write_text("TOKEN=new-secret\n")  # made after the first scan
    later = await run(shell, outside, "cat data/d005/.env.local")
    assert "new-secret" not in later.output
    shown = await run(shell_for(shell.sandbox, outside, show_secrets=True), outside, "cat .env")
    assert shown.output == "API_KEY=sk-project\n"  # the user allowed this command to read it


async def test_the_agents_environment_is_not_visible(
    outside: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_LSP_API_KEY", "sk-agent-secret-123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret-456")
    monkeypatch.setenv("MY_DEPLOY_URL", "https://user:pw-secret-789@example.com")
    monkeypatch.setenv("UNRELATED_SETTING", "not-passed")
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(shell, outside, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
    for secret in ["sk-agent-secret-123", "ghp-secret-456", "pw-secret-789", "not-passed"]:
        assert secret not in result.output
    assert "PATH=" in result.output


async def test_network_fails_unless_allowed(outside: Layout) -> None:
    sandbox = require_sandbox(outside.home, outside.ws.parent)
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
            blocked = await run(shell_for(sandbox, outside), outside, script)
            assert blocked.exit_code != 0 and "up" not in blocked.output, blocked.output
            allowed = await run(shell_for(sandbox, outside, network=True), outside, script)
            assert allowed.exit_code == 0 and "up" in allowed.output, allowed.output
    finally:
        server.close()
        await server.wait_closed()
    assert len(connected) == 2  # only the runs with the network reached the server


async def test_timeouts_kill_the_whole_sandbox(outside: Layout) -> None:
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await shell.run_script("sleep 31.5 & sleep 31.5", cwd=outside.ws, timeout=1)
    assert result.timed_out and result.duration < 10
    await asyncio.sleep(0.5)
    ps = await PosixShell().run(["ps", "-eo", "args"], cwd=outside.ws, timeout=10)
    assert "sleep 31.5" not in ps.output


async def test_run_command_goes_through_the_sandbox(outside: Layout) -> None:
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    channel = RecordingChannel()
    gate = CommandPolicy(channel, set(), engine=outside.policy("L2"))
    ws = Workspace(outside.ws, channel, gate)
    box = ToolBox([RunCommandTool(ws, shell, gate, 20)], 30, 60)

    async def call(command: str) -> tuple[int | None, str, dict[str, object]]:
        r = await box.call(
            ToolCall(id="1", name="run_command", arguments=json.dumps({"command": command}))
        )
        return r.metadata.get("exit_code"), r.output, r.metadata  # type: ignore[return-value]

    code, output, meta = await call("ls src")
    assert (code, output) == (0, "app.py\n") and str(meta["sandbox"]).startswith("bwrap")
    channel.answers = [ALLOW_ONCE]  # the user allows a write outside; the OS still refuses it
    code, output, _ = await call("touch /var/tmp/agent-lsp-approved.txt")
    assert code != 0 and "Read-only file system" in output
    assert not Path("/var/tmp/agent-lsp-approved.txt").exists()


async def test_without_namespaces_the_policy_fails_closed_and_says_so_once(
    tmp_path: Path, layout: Layout
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox = Sandbox(bwrap=str(fake), home=layout.home, private_base=tmp_path / "homes")
    status = sandbox.status()
    assert not status.available and "No permissions to create new namespace" in status.reason
    assert sandbox.wrap(["true"], layout.ws, Confinement(writable=(layout.ws,))) is None
    channel = RecordingChannel()
    engine = layout.policy("L3")
    engine.sandboxed = False
    gate = CommandPolicy(channel, set(), engine=engine)
    shell = ConfinedShell(sandbox, Confinement(writable=(layout.ws,), visible=(layout.ws,)))
    box = ToolBox([RunCommandTool(Workspace(layout.ws, channel, gate), shell, gate, 10)], 30, 60)
    for _ in range(2):
        r = await box.call(ToolCall(id="1", name="run_command", arguments='{"command": "ls src"}'))
        assert r.output == "app.py\n" and r.metadata["sandbox"] == "policy only"
    touched = await box.call(
        ToolCall(id="2", name="run_command", arguments='{"command": "touch made.txt"}')
    )
    assert touched.status.value == "error" and not (layout.ws / "made.txt").exists()
    assert len(channel.questions) == 1 and "touch made.txt" in channel.questions[0]
    notices = [e.message for e in channel.events if "sandbox" in e.message]
    assert len(notices) == 1 and "No OS sandbox" in notices[0]


def test_the_argv_uses_every_guard(tmp_path: Path, layout: Layout) -> None:
    fake = tmp_path / "bwrap-ok"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    (layout.ws / ".vscode").mkdir()
    sandbox = Sandbox(bwrap=str(fake), home=layout.home, private_base=tmp_path / "homes")
    confinement = Confinement(writable=(layout.ws,), visible=(layout.ws,))
    wrapped = sandbox.wrap(["bash", "-c", "x"], layout.ws / "src", confinement, {"PATH": "/bin"})
    assert wrapped is not None
    argv = wrapped.argv
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
    private = next((tmp_path / "homes").iterdir())
    assert f"--bind {private} {layout.home}" in text  # the home is a private folder
    assert f"--bind {layout.ws} {layout.ws}" in text
    for name in (".git", ".agent-lsp", ".vscode"):
        assert f"--ro-bind {layout.ws}/{name} {layout.ws}/{name}" in text
    assert f"--ro-bind /dev/null {layout.ws}/.env " in text
    assert f"--ro-bind /dev/null {layout.ws}/config/server.pem " in text
    assert argv[argv.index("--chdir") + 1] == str(layout.ws / "src")
    assert argv[-3:] == ["bash", "-c", "x"]
    shown = sandbox.wrap(
        ["x"], layout.ws, Confinement((layout.ws,), (layout.ws,), network=True, show_secrets=True)
    )
    assert shown is not None and "--share-net" in shown.argv
    assert f"{layout.ws}/.env" not in " ".join(shown.argv)
    assert Sandbox(enabled=False).wrap(["x"], layout.ws, confinement) is None


def test_a_fake_bwrap_first_on_path_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated virtualenv of the project could put its own `bwrap` first on PATH."""
    (tmp_path / "bwrap").write_text('#!/bin/sh\nshift $#\nexec "$@"\n')
    (tmp_path / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("AGENT_LSP_BWRAP", raising=False)
    found = probe(refresh=True).bwrap
    assert found != str(tmp_path / "bwrap")


def test_the_environment_is_an_allowlist(tmp_path: Path) -> None:
    env = sandbox_env(
        {
            "PATH": "/bin",
            "HOME": "/h",
            "OPENAI_API_KEY": "k",
            "AGENT_LSP_MODEL": "m",
            "GH_TOKEN": "t",
            "AWS_SECRET_ACCESS_KEY": "s",
            "BASH_ENV": "/x",
            "DB_PASSWORD": "p",
            "LANG": "C",
            "VIRTUAL_ENV": "/v",
            "GOFLAGS": "-mod=mod",
            "npm_config_registry": "https://r",
            "npm_config__authToken": "t2",
            "PIP_INDEX_URL": "https://u:p@index",
            "EDITOR": "vim",
            "MY_SETTING": "passed by the user",
        },
        tmp_path,
        pass_env=["MY_SETTING", "AGENT_LSP_API_KEY"],
    )
    assert env == {
        "PATH": "/bin",
        "HOME": str(tmp_path),
        "TMPDIR": "/tmp",
        "LANG": "C",
        "VIRTUAL_ENV": "/v",
        "GOFLAGS": "-mod=mod",
        "npm_config_registry": "https://r",
        "MY_SETTING": "passed by the user",
    }
