"""`ask_user` in the terminal: a prompt on a real terminal (a pty), answered in words; without
a terminal (stdin a pipe) the model is told there was no answer."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages

ASK = Reply(tool_calls=[ToolCall("ask_user", {"question": "Which greeting should I use?"})])


def test_a_question_in_a_terminal_is_answered_in_words(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(ASK, Reply("Noted."))
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", "--root", str(project), "greet"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=server_env,
        close_fds=True,
    )
    os.close(slave)
    seen, sent = b"", False
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            if not sent and b"your answer: " in seen:
                os.write(master, b"  bonjour, in French \n")
                sent = True
            if child.poll() is not None and not ready:
                break
    finally:
        child.wait(timeout=30)
        os.close(master)
    out = seen.decode(errors="replace")
    assert sent, out
    assert "? Which greeting should I use?" in out
    assert "the user answered: bonjour, in French" in tool_messages(fake_openai.requests[1])[0]


def test_without_a_terminal_the_model_is_told_there_was_no_answer(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(ASK, Reply("Noted."))
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "run", "--root", str(project), "greet"],
        input="",
        capture_output=True,
        text=True,
        env=server_env,
        timeout=300,
    )
    assert "no terminal to answer on: no answer" in done.stdout
    result = tool_messages(fake_openai.requests[1])[0]
    assert "no answer: the user gave no answer (dismissed, or no one to answer)" in result
