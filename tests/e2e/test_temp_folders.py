"""The server's temporary folders (the shadow copy, the sandbox's scratch) do not outlive it:
an editor's SIGTERM removes them, and a start sweeps those a killed server left behind."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from lsprotocol import types as t
from pytest_lsp import ClientServerConfig

from tests.e2e.editor_client import EditorClient, _make_client, capabilities  # pyright: ignore[reportPrivateUsage]
from tests.fakes.openai_server import FakeOpenAIServer


def _ours(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("agent-lsp-"))


async def test_sigterm_removes_the_shadow_and_scratch_folders(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**server_env, "TMPDIR": str(tmp)}
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "agent_lsp", "serve"],
        client_factory=_make_client,
        server_env=env,
    )
    client = await config.start()
    assert isinstance(client, EditorClient)
    server = client._server  # pyright: ignore[reportPrivateUsage]
    assert server is not None
    try:
        await client.initialize_session(
            t.InitializeParams(
                capabilities=capabilities("vscode"),
                root_uri=project.as_uri(),
                workspace_folders=[t.WorkspaceFolder(uri=project.as_uri(), name=project.name)],
            )
        )
        started = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.runTests", arguments=[])
        )
        assert started == {"status": "started"}
        await client.wait_for_message("agent-lsp: tests: 1 passed, 1 failed")
        kinds = {name.split("-")[2] for name in _ours(tmp)}  # agent-lsp-<kind>-...
        expected = {"shadow", "scratch"} if shutil.which("bwrap") else {"shadow"}
        assert kinds == expected, _ours(tmp)
        server.send_signal(signal.SIGTERM)  # the editor closes
        code = await asyncio.wait_for(server.wait(), timeout=60)
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
        await client.stop()
    assert code == -signal.SIGTERM
    assert _ours(tmp) == []
    assert fake_openai.requests == []


def test_a_start_sweeps_the_folders_of_dead_servers_only(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no process has now
    live = os.getpid()
    ns = Path("/proc/self/ns/pid").stat().st_ino  # the server's pid namespace too
    planted = {
        "dead_scratch": tmp / f"agent-lsp-scratch-{gone.pid}-{ns}-k3x9_q2a",
        "dead_shadow": tmp / f"agent-lsp-shadow-{gone.pid}-{ns}-7hh2m0zz",
        "live": tmp / f"agent-lsp-shadow-{live}-{ns}-a1b2c3d4",
        "older_version": tmp / "agent-lsp-scratch-a1b2c3d4",  # no owner in the name
        "not_ours": tmp / f"other-tool-scratch-{gone.pid}-{ns}-a1b2c3d4",
        "other_user": tmp / f"agent-lsp-scratch-{gone.pid}-{ns}-otheruid",
        # a sandbox's process (its own pid namespace), where our pid means nothing
        "other_namespace": tmp / f"agent-lsp-scratch-{gone.pid}-{ns + 1}-a1b2c3d4",
    }
    for folder in planted.values():
        (folder / "inner").mkdir(parents=True)
        (folder / "inner" / "file.txt").write_text("x\n")
    if os.getuid() == 0:
        os.chown(planted["other_user"], 12345, 12345)
    else:
        del planted["other_user"]
    # A server the editor starts and closes at once (stdin at its end).
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "serve"],
        env={**server_env, "TMPDIR": str(tmp)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    left = {name for name, folder in planted.items() if folder.exists()}
    kept = {"live", "older_version", "not_ours", "other_user", "other_namespace"}
    assert left == kept & planted.keys()
    assert (planted["live"] / "inner" / "file.txt").read_text() == "x\n"
