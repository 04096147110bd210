"""`agent-lsp run` in a real terminal (a pty): the permission prompt shows the whole command,
escaped, and the user's answer decides."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from agent_lsp.permissions import visible
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages

# Long enough that a prompt cut at a few hundred characters would hide the end; the tail has an
# invisible character that must show escaped.
COMMAND = "touch made.txt; echo " + "x" * 1_500 + "; touch tail-of-it\u200b.txt"


def run_in_terminal(project: Path, env: dict[str, str], answer: str) -> str:
    """`agent-lsp run` with a pty as its terminal; answers the first prompt with `answer`."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", "--root", str(project), "tidy up"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    seen, answered = b"", False
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if not answered and b"[Allow once/Deny]" in seen:
                os.write(master, answer.encode() + b"\n")
                answered = True
            if child.poll() is not None and not ready:
                break
    finally:
        child.wait(timeout=30)
        os.close(master)
    assert answered, seen.decode(errors="replace")
    return seen.decode(errors="replace").replace("\r\n", "\n")


def test_the_terminal_prompt_shows_the_whole_command_and_the_answer_decides(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": COMMAND})]), Reply("Stopped.")
    )
    out = run_in_terminal(project, server_env, "Deny")
    assert f"? agent-lsp wants to run: {visible(COMMAND)} — " in out
    assert "tail-of-it\\u200b.txt" in out and "\u200b" not in out
    assert "  [Allow once/Deny] " in out  # a compound command is never "always" allowed
    assert not (project / "made.txt").exists()
    assert "not run: user: denied" in tool_messages(fake_openai.requests[1])[0]
