"""Long-running commands through `run_command` become a readiness check: real servers and
watchers (python -m http.server, a Python script, a node server behind `npm run dev`) are
started in the real sandbox where the machine has one, waited for, stopped, and reported;
nothing of their process group survives."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import pytest

from agent_lsp.config.schema import PermissionLevel
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.messages import ToolCall, ToolResult, ToolStatus
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.engine import SafetyPolicy
from agent_lsp.safety.policy import ALLOW_ONCE, CommandPolicy
from agent_lsp.safety.sandbox import Confinement, Sandbox
from agent_lsp.tools import RunCommandTool
from tests.conftest import which_or_skip
from tests.fakes.channel import RecordingChannel

PY = sys.executable

SLOW_READY = """\
import time
time.sleep(1.0)
print("booting...", flush=True)
time.sleep(0.5)
print("ready to serve on 4711", flush=True)
while True:
    time.sleep(60)
"""

CRASH = """\
import sys
print("starting", flush=True)
def load_settings():
    raise KeyError("DATABASE_URL")
load_settings()
"""

# A watcher that never gets ready: it keeps a child, ignores TERM, prints only noise.
NEVER_READY = """\
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]])
while True:
    print("scanning files...", flush=True)
    time.sleep(0.3)
"""

NODE_SERVER = """\
const http = require("http");
const port = Number(process.env.PORT || 3456);
http.createServer((req, res) => res.end("hi")).listen(port, () => {
  console.log(`dev server listening on ${port}`);
});
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Box:
    def __init__(self, ws: Path, home: Path, sandboxed: bool) -> None:
        self.ws = ws
        self.sandbox = Sandbox(sandboxed, home=home, private_base=home.parent / "private-homes")
        if sandboxed and not self.sandbox.available:
            pytest.skip(self.sandbox.status().reason)
        self.channel = RecordingChannel()
        engine = SafetyPolicy(
            ws, PermissionLevel("L2"), None, home=home, sandboxed=self.sandbox.available
        )
        gate = CommandPolicy(self.channel, set(), engine=engine)
        shell = ConfinedShell(self.sandbox, Confinement(writable=(ws,), visible=(ws,)))
        tool = RunCommandTool(Workspace(ws, self.channel, gate), shell, gate, 60)
        self.box = ToolBox([tool], 30, 120)  # type: ignore[list-item]

    async def run(self, **args: object) -> ToolResult:
        self.channel.answers = [ALLOW_ONCE]
        call = ToolCall(id="1", name="run_command", arguments=json.dumps(args))
        return await self.box.call(call)


@pytest.fixture(params=["sandbox", "no-sandbox"])
def box(tmp_path: Path, request: pytest.FixtureRequest) -> Box:
    """The real bubblewrap sandbox (a network namespace of its own), and none (the policy
    asks; the server listens on the host)."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    ws, home = tmp_path.resolve() / "ws", tmp_path.resolve() / "home"
    return Box(ws, home, request.param == "sandbox")


def processes_with(marker: str) -> list[str]:
    found: list[str] = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in args and "pytest" not in args:
            found.append(f"{cmdline.parent.name}: {args}")
    return found


async def nothing_left(marker: str) -> list[str]:
    """The processes still running with `marker` in their command line (after a bounded
    wait for the kernel to finish tearing down a killed sandbox)."""
    left = processes_with(marker)
    for _ in range(50):
        if not left:
            break
        await asyncio.sleep(0.1)
        left = processes_with(marker)
    return left


async def test_a_dev_server_is_a_readiness_check_not_a_timeout(box: Box) -> None:
    port = free_port()
    command = f"{PY} -m http.server {port} --bind 127.0.0.1 --directory {box.ws}"
    result = await box.run(command=command, timeout=15)  # before: hung the 15 s, then failed
    assert result.status is ToolStatus.SUCCESS, result
    first, second = result.output.splitlines()[:2]
    assert first.startswith("started as a readiness check; stopped after ")
    assert second.startswith("ready after ") and f"port {port} accepts connections" in second
    ready = result.metadata["readiness"]
    assert (ready["status"], ready["port"], ready["ready"]) == ("port", port, True)
    assert await nothing_left(str(box.ws)) == []


async def test_a_ready_line_after_a_delay(box: Box) -> None:
    (box.ws / "slow_server.py").write_text(SLOW_READY)
    result = await box.run(
        command=f"{PY} {box.ws}/slow_server.py", ready=r"ready to serve on \d+", timeout=30
    )
    assert result.status is ToolStatus.SUCCESS, result
    assert "ready after" in result.output
    assert "it printed 'ready to serve on 4711'" in result.output
    assert result.output.endswith("booting...\nready to serve on 4711")
    assert result.metadata["readiness"]["status"] == "line"
    assert result.metadata["readiness"]["ready_after"] >= 1.0
    assert await nothing_left(str(box.ws)) == []


async def test_a_crash_at_startup_reports_the_exit_code_and_the_traceback(box: Box) -> None:
    (box.ws / "app.py").write_text(CRASH)
    result = await box.run(command=f"{PY} {box.ws}/app.py", until_ready=True, timeout=30)
    assert result.status is ToolStatus.ERROR
    assert result.error is not None
    assert result.error.startswith("started as a readiness check; stopped after ")
    assert "Not ready: it exited with code 1 after " in result.error
    assert "Traceback (most recent call last)" in result.output
    assert result.output.rstrip().endswith("KeyError: 'DATABASE_URL'")
    assert result.metadata["exit_code"] == 1
    assert result.metadata["readiness"]["status"] == "exited"


async def test_a_recognised_server_that_crashes(box: Box) -> None:
    command = f"{PY} -m http.server --bind 300.1.2.3 --directory {box.ws}"
    result = await box.run(command=command)
    assert result.status is ToolStatus.ERROR and result.error is not None
    assert "it exited with code 1" in result.error and "[http.server]" in result.error
    assert "socket.gaierror" in result.output


async def test_npm_run_dev_of_a_node_server(box: Box) -> None:
    which_or_skip("npm")
    which_or_skip("node")
    port = free_port()
    (box.ws / "server.js").write_text(NODE_SERVER)
    scripts = {"dev": f"PORT={port} node {box.ws}/server.js", "test": "node -e 0"}
    (box.ws / "package.json").write_text(json.dumps({"name": "demo", "scripts": scripts}))
    result = await box.run(command="npm run dev")
    assert result.status is ToolStatus.SUCCESS, result
    assert result.output.startswith("started as a readiness check; stopped after ")
    ready = result.metadata["readiness"]
    if ready["status"] == "port":  # it accepted before its listen callback had printed
        assert ready["port"] == port and f"port {port} accepts connections" in result.output
    else:
        assert ready["line"] == f"dev server listening on {port}", ready
    assert f"[npm script dev: PORT={port} node" in result.output
    assert result.metadata["readiness"]["ports_checked"] == [port]
    assert await nothing_left(str(box.ws)) == []


async def test_a_watcher_that_never_gets_ready_is_stopped_with_its_whole_group(
    box: Box,
) -> None:
    (box.ws / "watch.py").write_text(NEVER_READY)
    marker = f"{box.ws}/never-ready-child"
    scripts = {"watch": f"{PY} {box.ws}/watch.py {marker}"}
    (box.ws / "package.json").write_text(json.dumps({"name": "demo", "scripts": scripts}))
    which_or_skip("npm")
    result = await box.run(command="npm run watch", timeout=8)
    assert result.status is ToolStatus.ERROR and result.error is not None
    assert result.error.startswith("started as a readiness check; stopped after ")
    assert "(process group killed). Not ready after 8 s (no ready line)" in result.error
    assert "scanning files..." in result.output
    assert result.metadata["readiness"]["status"] == "timeout"
    assert await nothing_left(marker) == []
    assert await nothing_left(str(box.ws)) == []


async def test_the_model_decides_how_it_runs(box: Box) -> None:
    done = await box.run(command="echo built", until_ready=True)  # finishes by itself
    assert done.status is ToolStatus.SUCCESS
    assert "it exited with code 0 after" in done.output and "not a long-running" in done.output
    plain = await box.run(command=f"{PY} -m http.server --help", until_ready=False)
    assert plain.status is ToolStatus.SUCCESS and "readiness" not in plain.output
    assert "readiness" not in plain.metadata
    bad = await box.run(command="touch made.txt", ready="([")
    assert bad.status is ToolStatus.ERROR and bad.error is not None
    assert bad.error.startswith("not run: ready: '([' is neither a port nor a valid regex")
    assert not (box.ws / "made.txt").exists()


async def test_a_port_taken_before_the_start_does_not_count(tmp_path: Path) -> None:
    """Without a sandbox the command shares the host's network: a port something else
    already listens on is not taken for this server being ready."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    box = Box(tmp_path.resolve() / "ws", tmp_path.resolve() / "home", sandboxed=False)
    (box.ws / "idle.py").write_text("import time\nprint('idle', flush=True)\ntime.sleep(600)\n")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        result = await box.run(command=f"{PY} {box.ws}/idle.py", ready=str(port), timeout=2)
    assert result.status is ToolStatus.ERROR and result.error is not None
    assert f"Not ready after 2 s (no connection on port {port}, no ready line)" in result.error
    assert f"Port {port} was already in use before it started (not counted)." in result.error
    assert result.metadata["readiness"]["busy_before"] == [port]
    assert await nothing_left(str(box.ws)) == []
