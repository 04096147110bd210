"""The agent loop with the real openai client against the scripted fake model: a dev server
the model starts comes back to it as a readiness check (ready, on which port, stopped), and
a server that crashes at startup comes back with its exit code and traceback."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

from agent_lsp.messages import TaskStatus
from agent_lsp.safety.policy import ALLOW_ONCE
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages
from tests.test_agent import make_session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_the_model_is_told_the_server_was_ready_and_stopped(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<h1>hi</h1>\n")
    (root / "boot.py").write_text("import sys\nprint('loading')\nraise SystemExit('no config')\n")
    port = free_port()
    serve = f"{sys.executable} -m http.server {port} --bind 127.0.0.1"
    boot = f"{sys.executable} boot.py"
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": serve, "timeout": 20})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": boot, "ready": "up"})]),
        Reply("The site serves; boot.py needs a config."),
    )
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE, ALLOW_ONCE]
    session = make_session(root, fake_openai.base_url)
    outcome = await session.run_task(Task(kind=TaskKind.TASK, instruction="serve it"), channel)
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED, outcome

    served, booted = (json.loads(m) for m in tool_messages(fake_openai.requests[-1]))
    assert served["status"] == "success"
    lines = served["output"].splitlines()
    assert lines[0].startswith("started as a readiness check; stopped after ")
    assert lines[1].startswith("ready after ")
    assert lines[1].endswith(f"port {port} accepts connections. [http.server]")
    assert served["metadata"]["readiness"]["port"] == port
    assert booted["status"] == "error"
    assert "Not ready: it exited with code 1 after" in booted["error"]
    assert booted["output"].endswith("loading\nno config")
