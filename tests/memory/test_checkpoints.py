"""Checkpoints: a task killed mid-way resumes and finishes; undo restores the files step by step."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent_lsp.errors import AgentLspError
from agent_lsp.messages import TaskStatus
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall
from tests.memory.helpers import system_of
from tests.scripts import fix_average_script, tool_messages
from tests.test_agent import make_session
from tests.test_cli import agent_lsp

TASK = "make the failing test pass"


def first_task_id(project: Path) -> str:
    [folder] = [p for p in (project / ".agent-lsp/checkpoints").iterdir() if p.name != "objects"]
    return folder.name


def test_a_killed_run_resumes_from_its_checkpoint_finishes_and_can_be_undone(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    read, edit, run_tests, answer = fix_average_script()
    fake_openai.script(read, edit, Hang(60))  # the third model call never answers
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", TASK, "--root", str(project)],
        env=server_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fake_openai.wait_for_requests(3, timeout=60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert (project / "calc.py").read_text().count(FIX) == 1  # the edit had landed

    fake_openai.script(run_tests, answer)
    done = agent_lsp("run", "--resume", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"▶ resumed at step 2: {TASK}"
    assert "[ 3] ← run_tests: success: pytest: 2 passed, 0 failed" in done.stdout
    assert any(line.startswith("■ completed after 4 steps: Fixed average()") for line in lines)
    resumed = fake_openai.requests[3]
    assert len(fake_openai.requests) == 5  # the hung call, then two more: nothing replayed
    assert resumed["messages"][1]["content"].startswith(TASK)
    assert "edited calc.py at line 10" in tool_messages(resumed)[1]
    context = system_of(resumed)
    assert "## Starting context, rebuilt after a restart" in context
    assert f"## goal\n{TASK}" in context

    again = agent_lsp("run", "--resume", "--root", str(project), env=server_env)
    assert again.returncode == 2 and "no interrupted task to resume" in again.stderr

    undo = agent_lsp("undo", "--all", "--root", str(project), env=server_env)
    assert undo.returncode == 0, undo.stderr
    assert undo.stdout.splitlines() == [
        "  ✎ agent-lsp: undo step 2",
        f"undid step 2 of task {first_task_id(project)}; restored calc.py",
    ]
    assert (project / "calc.py").read_text().count(BUG) == 1


async def test_undo_restores_the_files_step_by_step(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    app = plain / "app.py"
    original = app.read_text()
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "edit_file", {"path": "app.py", "old_text": "'hi '", "new_text": "'hello '"}
                )
            ]
        ),
        Reply(tool_calls=[ToolCall("write_file", {"path": "util.py", "content": "X = 1\n"})]),
        Reply("Said hello, added util.py."),
    )
    channel = RecordingChannel({app: original})  # app.py is open: edits go to the buffer
    session = make_session(plain, fake_openai.base_url)
    outcome = await session.run_task(Task(kind=TaskKind.TASK, instruction="say hello"), channel)
    assert outcome.status is TaskStatus.COMPLETED and outcome.task_id
    assert "'hello '" in channel.open[app.resolve()] and (plain / "util.py").exists()

    first = await session.undo(channel)
    assert (first.steps, first.deleted, first.restored) == ([3], ["util.py"], [])
    assert not (plain / "util.py").exists() and "'hello '" in channel.open[app.resolve()]

    channel.open[app.resolve()] += "# the user typed this\n"
    with pytest.raises(AgentLspError, match=r"app\.py changed after step 2; nothing undone"):
        await session.undo(channel)
    channel.open[app.resolve()] = channel.open[app.resolve()].replace("# the user typed this\n", "")

    second = await session.undo(channel)
    assert second.message() == f"undid step 2 of task {outcome.task_id}; restored app.py"
    assert channel.open[app.resolve()] == original and app.read_text() == original
    assert channel.edits[-1][2] == "agent-lsp: undo step 2"
    with pytest.raises(AgentLspError, match="nothing to undo"):
        await session.undo(channel)
    await session.aclose()
    entries = [json.loads(x) for x in session.log_path.read_text().splitlines()]
    undone = [e for e in entries if e.get("tool") == "undo"]
    assert [(e["path"], e["source"]) for e in undone] == [("util.py", "user"), ("app.py", "user")]


async def test_an_interrupted_task_is_offered_for_resume_until_declined(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]), Hang(60))
    session = make_session(plain, fake_openai.base_url)
    assert session.pending_resume() is None
    job = asyncio.create_task(
        session.run_task(Task(kind=TaskKind.TASK, instruction="tidy app.py"), RecordingChannel())
    )
    await asyncio.to_thread(fake_openai.wait_for_requests, 2)
    assert session.pending_resume() is None  # running here: not offered
    job.cancel()  # e.g. the editor shut the server down
    with pytest.raises(asyncio.CancelledError):
        await job

    offer = session.pending_resume()
    assert offer is not None and (offer.title, offer.step) == ("tidy app.py", 1)
    other = make_session(plain, fake_openai.base_url)  # as after a restart
    assert other.pending_resume() == offer
    assert other.discard_resume() == offer.task_id
    assert other.pending_resume() is None and session.pending_resume() is None
    await session.aclose()
    await other.aclose()
