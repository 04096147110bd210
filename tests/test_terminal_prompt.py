"""`agent-lsp run` in a real terminal (a pty): the permission prompt shows the whole command,
escaped, and the user's answer decides."""

from __future__ import annotations

import contextlib
import ctypes
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_lsp.cli.terminal import parse_answer
from agent_lsp.safety.policy import visible
from tests.conftest import interruptible
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall
from tests.scripts import tool_messages

# Long enough that a prompt cut at a few hundred characters would hide the end; the tail has an
# invisible character that must show escaped.
COMMAND = "touch made.txt; echo " + "x" * 1_500 + "; touch tail-of-it\u200b.txt"


PROMPT = b"Deny] "  # the end of the prompt line


def run_in_terminal(
    project: Path, env: dict[str, str], *answers: bytes, task: str = "tidy up"
) -> str:
    """`agent-lsp run` with a pty as its terminal; answers each prompt (the first, then each
    time it is asked again) with the next of `answers` (each sent as typed, then Enter)."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", "--root", str(project), task],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    seen, sent = b"", 0
    deadline = time.monotonic() + 180
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
            if sent < len(answers) and seen.count(PROMPT) > sent:
                os.write(master, answers[sent])
                sent += 1
            if child.poll() is not None and not ready:
                break
    finally:
        child.wait(timeout=30)
        os.close(master)
    assert sent == len(answers), seen.decode(errors="replace")
    return seen.decode(errors="replace").replace("\r\n", "\n")


def test_the_terminal_prompt_shows_the_whole_command_and_the_answer_decides(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": COMMAND})]), Reply("Stopped.")
    )
    out = run_in_terminal(project, server_env, b"Deny\n")
    assert f"? agent-lsp wants to run: {visible(COMMAND)} — " in out
    assert "tail-of-it\\u200b.txt" in out and "\u200b" not in out
    assert "  [1 Allow once | 2 Deny] " in out  # a compound command is never "always" allowed
    assert not (project / "made.txt").exists()
    assert "not run: user: denied" in tool_messages(fake_openai.requests[1])[0]


@pytest.mark.parametrize("answer", [b"y\n", b"1\n", b"  allow ONCE \n", b"a\n"])
def test_the_usual_ways_of_saying_yes_allow(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], answer: bytes
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": "touch made.txt; true"})]),
        Reply("Stopped."),
    )
    run_in_terminal(project, server_env, answer)
    assert (project / "made.txt").exists()
    assert "not run" not in tool_messages(fake_openai.requests[1])[0]


def test_an_answer_that_picks_nothing_is_asked_again_and_end_of_input_is_no(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": "touch made.txt; true"})]),
        Reply(tool_calls=[ToolCall("run_command", {"command": "touch other.txt; true"})]),
        Reply("Stopped."),
    )
    out = run_in_terminal(project, server_env, b"maybe\n", b"N\n", b"\x04")
    assert "maybe: please answer with a number (1-2), the start of an option, or y/n" in out
    assert out.count("[1 Allow once | 2 Deny]") == 3  # asked again once, then the next command
    assert "no answer (end of input): Deny" in out
    assert not (project / "made.txt").exists() and not (project / "other.txt").exists()
    assert "not run: user: denied" in tool_messages(fake_openai.requests[1])[0]
    assert "not run" in tool_messages(fake_openai.requests[2])[1]


def test_answers_pick_one_option_or_none() -> None:
    three = ["Allow once", "Always allow", "Deny"]
    picks = {
        "1": "Allow once",
        " 2 ": "Always allow",
        "3": "Deny",
        "Y": "Allow once",
        "yes": "Allow once",
        "no": "Deny",
        "d": "Deny",
        "alw": "Always allow",
        "always  ALLOW": "Always allow",
        "allow": "Allow once",
        "a": None,  # Allow once or Always allow: asked again
        "4": None,
        "0": None,
        "": None,
        "sure": None,
    }
    assert {said: parse_answer(said, three) for said in picks} == picks
    assert parse_answer("n", ["Resume", "Discard"]) == "Discard"
    assert parse_answer("y", ["OK"]) is None


def test_waiting_on_the_model_shows_the_time_on_a_terminal(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(
        Hang(3),
        Reply(tool_calls=[ToolCall("run_command", {"command": "touch made.txt; true"})]),
        Reply("Stopped."),
    )
    out = run_in_terminal(project, server_env, b"n\n")
    assert re.search(r"\r  \S waiting for the model \d+ s\x1b\[K", out), out


def interrupt_a_worker_thread(pid: int) -> None:
    """SIGINT delivered to one of the process's other threads, as the kernel does when the main
    thread has a signal pending already (a child's SIGCHLD on a loaded machine)."""
    tasks = Path(f"/proc/{pid}/task").iterdir()
    threads = sorted(int(task.name) for task in tasks if int(task.name) != pid)
    assert threads, "the run has no other thread"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.tgkill(pid, threads[-1], signal.SIGINT) != 0:
        raise OSError(ctypes.get_errno(), "tgkill")


@pytest.mark.parametrize("to", ["the process", "a worker thread"])
def test_ctrl_c_at_the_prompt_ends_the_run_at_once(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], to: str
) -> None:
    if to == "a worker thread" and not Path("/proc/self/task").is_dir():
        pytest.skip("needs /proc to reach one thread")
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": "touch made.txt; true"})]),
        Reply("Stopped."),
    )
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", "--root", str(project), "tidy up"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=server_env,
        close_fds=True,
        preexec_fn=interruptible,
    )
    os.close(slave)
    seen, sent = b"", False
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and child.poll() is None:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
            if not sent and PROMPT in seen:
                if to == "the process":  # Ctrl-C while the prompt waits for a line
                    child.send_signal(signal.SIGINT)
                else:
                    interrupt_a_worker_thread(child.pid)
                sent = True
                deadline = time.monotonic() + 60  # it ends by itself: nothing waits for a line
        child.wait(timeout=5)
    finally:
        if child.poll() is None:
            child.kill()
        with contextlib.suppress(OSError):
            while select.select([master], [], [], 0.2)[0]:
                chunk = os.read(master, 65536)
                if not chunk:
                    break
                seen += chunk
        os.close(master)
    out = seen.decode(errors="replace")
    assert sent, out
    assert child.returncode == 130, out
    assert "agent-lsp: interrupted; resume with: agent-lsp run --resume" in out
    assert "Traceback" not in out
    assert not (project / "made.txt").exists()


def test_the_outcome_is_printed_on_a_line_of_its_own_after_a_spinner(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    env = {**server_env, "AGENT_LSP_BASE_URL": "http://127.0.0.1:9/v1"}  # nothing listens
    fake_openai.script(Reply("unused"), Reply("unused"))
    out = run_in_terminal(project, env)
    lines = out.split("\n")
    [outcome] = [line for line in lines if "■ error after 1 steps" in line]
    shown = outcome.rsplit("\r", 1)[-1].removeprefix("\x1b[K")  # what the terminal shows
    assert shown.startswith("■ error after 1 steps"), out
