"""`agent-lsp run --team` as a user runs it: a subprocess, the fake model over HTTP, real
pytest; killed in EXECUTING, `run --resume` finishes the task from the step it stopped at."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.records import read_signed
from tests.team.conftest import (
    AREA,
    AREA_BODY,
    COMMANDER,
    PERIMETER,
    PERIMETER_BODY,
    PLANNER,
    REVIEWER,
    TASK,
    TWO_STEPS,
    edit_step,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import count, script_feature
from tests.test_cli import agent_lsp


def team_state(root: Path) -> dict[str, Any] | None:
    folder = root / ".agent-lsp" / "state" / "team"
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return read_signed(files[-1], "team") if files else None


def test_run_team_does_a_two_module_feature_and_exits_zero(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    script_feature(fake_openai)
    done = agent_lsp("run", "--team", TASK, "--root", str(shapes), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "■ team completed: done: 2 steps (s1, s2); full suite: 2 passed" in done.stdout
    assert "  s1 [done] implement square_area" in done.stdout
    assert (
        "tokens by role: commander 35, planner 120, editor 420, reviewer 90 tokens" in done.stdout
    )
    assert "team: editor s2 completed (210 tokens)" in done.stdout  # names role and step
    assert (
        "team: planner completed (120 tokens); so far commander 35, planner 120 tokens"
        in done.stdout
    )
    assert (shapes / "area.py").read_text() == AREA
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    assert "Traceback" not in done.stderr


def test_a_team_task_killed_in_executing_is_resumed_to_done(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    s1_then_s2 = (TWO_STEPS[0], {**TWO_STEPS[1], "depends_on": ["s1"]})
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(*s1_then_s2))
    fake_openai.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    release = threading.Event()

    def hang(_: dict[str, Any]) -> Reply:  # s2's first request: the process dies waiting
        release.wait(60)
        return Reply("too late")

    fake_openai.script_for(
        step_marker("s2"), hang, *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done")
    )
    fake_openai.script_for(REVIEWER, review([]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", "--team", TASK, "--root", str(shapes)],
        env=server_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while count(fake_openai, step_marker("s2")) < 1:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "s2 never started"
            time.sleep(0.1)
        state = team_state(shapes)
        assert state is not None and state["phase"] == "EXECUTING"
        assert [s["status"] for s in state["steps"]] == ["done", "running"]
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert (shapes / "area.py").read_text() == AREA
    assert (shapes / "perimeter.py").read_text().endswith("raise NotImplementedError\n")

    done = agent_lsp("run", "--resume", "--root", str(shapes), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "team: resuming" in done.stdout
    assert "■ team completed: done: 2 steps (s1, s2); full suite: 2 passed" in done.stdout
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    assert count(fake_openai, PLANNER) == 1  # not planned again
    assert count(fake_openai, step_marker("s1")) == 3  # s1 was not run again
    assert count(fake_openai, step_marker("s2")) == 4  # the lost request + s2's three
    state = team_state(shapes)
    assert state is not None and state["phase"] == "DONE"
    assert [s["attempts"] for s in state["steps"]] == [1, 2]
    assert state["history"][-3:] == ["EXECUTING→VERIFYING", "VERIFYING→REVIEWING", "REVIEWING→DONE"]
    assert "Traceback" not in done.stderr


def test_run_resume_without_an_interrupted_team_task_says_so(
    shapes: Path, server_env: dict[str, str]
) -> None:
    done = agent_lsp("run", "--team", "--resume", "--root", str(shapes), env=server_env)
    assert done.returncode == 2
    assert "agent-lsp: no interrupted team task to resume" in done.stderr
    assert "Traceback" not in done.stderr


def test_run_team_without_a_test_runner_is_done_unverified_and_exits_3(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("todo\n")
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "mark the notes done", "files": ["notes.txt"]})
    )
    fake_openai.script_for(
        step_marker("s1"),
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "edit_file", {"path": "notes.txt", "old_text": "todo\n", "new_text": "done\n"}
                )
            ]
        ),
        Reply("marked"),
    )
    fake_openai.script_for(REVIEWER, review([]))
    done = agent_lsp("run", "--team", "mark the notes done", "--root", str(folder), env=server_env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "■ team completed: done: 1 steps (s1); no test runner found: not verified" in done.stdout
    assert (folder / "notes.txt").read_text() == "done\n"
