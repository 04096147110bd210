"""`agent-lsp run --json` and `--at` as a script or CI job uses them, from outside: every line
of stdout is JSON and the last one is the outcome whose `exit_code` is the process's — for a
usage error, an interrupted run and a failed task too — and a place given with `--at` that is
not in the file or the project is a usage error (exit 2) said in one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import interruptible
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply
from tests.test_cli import agent_lsp


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]  # every line parses


@pytest.mark.parametrize(
    "args",
    [
        [],  # no task
        ["--team", "fix it"],  # (team mode: see below; here with --task)
        ["--task", "abc", "fix it"],  # --task without --continue
        ["--max-steps", "many", "fix it"],  # not a number
        ["--resume", "--at", "calc.py:3"],  # a resumed task keeps its own place
        ["--continue", "go on", "--at", "calc.py:3"],  # and a continued one
    ],
    ids=[
        "no-task",
        "team-with-task",
        "task-without-continue",
        "bad-number",
        "at-with-resume",
        "at-with-continue",
    ],
)
def test_a_usage_error_of_run_json_is_a_json_outcome_with_exit_code_2(
    project: Path, server_env: dict[str, str], args: list[str]
) -> None:
    if args[:1] == ["--team"]:
        args = ["--team", "--continue", "hint"]  # --continue finds a team task itself
    done = agent_lsp("run", "--json", *args, "--root", str(project), env=server_env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = json_lines(done.stdout)
    assert (line["type"], line["status"], line["exit_code"]) == ("outcome", "error", 2), line
    assert line["summary"] and line["summary"].splitlines()[0] in done.stderr, done.stderr
    if "--at" in args:  # said before anything is looked for: not "no task to resume"
        assert "--at goes with a new task" in line["summary"], line


def test_a_failed_task_is_not_called_verified(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply("Done!"), Reply("Really done!"))
    done = agent_lsp(
        "run", "--json", "fix it", "--max-steps", "2", "--root", str(project), env=server_env
    )
    outcome = json_lines(done.stdout)[-1]
    assert (outcome["status"], outcome["exit_code"], done.returncode) == ("failed", 1, 1)
    assert outcome["verified"] is False, outcome


def test_a_model_endpoint_that_fails_is_a_json_outcome_with_exit_code_1(
    project: Path, server_env: dict[str, str]
) -> None:
    env = {**server_env, "AGENT_LSP_BASE_URL": "http://127.0.0.1:9/v1"}  # nobody listens
    done = agent_lsp("run", "--json", "fix it", "--root", str(project), env=env)
    outcome = json_lines(done.stdout)[-1]
    assert (outcome["type"], outcome["status"], outcome["exit_code"]) == ("outcome", "error", 1)
    assert done.returncode == 1
    assert "cannot reach the model" in outcome["summary"], outcome
    assert outcome["verified"] is False


def test_an_interrupted_run_json_ends_with_its_outcome_and_exit_code_130(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Hang(60), Reply("too late"))
    with subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", "--json", "fix it", "--root", str(project)],
        env=server_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        preexec_fn=interruptible,
    ) as process:
        fake_openai.wait_for_requests(1, timeout=60)
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    outcome = json_lines(out)[-1]
    assert (outcome["type"], outcome["status"], outcome["exit_code"]) == (
        "outcome",
        "interrupted",
        130,
    ), outcome
    assert outcome["task_id"] and "agent-lsp run --resume" in outcome["summary"], outcome


@pytest.mark.parametrize(
    ("at", "said"),
    [
        ("calc.py:99", "calc.py has 10 lines: line 99 is not in it"),
        ("calc.py:9-40", "calc.py has 10 lines: line 40 is not in it"),
    ],
)
def test_at_a_line_past_the_end_of_the_file_is_a_usage_error(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], at: str, said: str
) -> None:
    fake_openai.default_reply = Reply("Done.")
    done = agent_lsp(
        "run", "--json", "--at", at, "look", "--root", str(project), env=server_env, cwd=project
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"agent-lsp run: --at {at}: {said}\n"
    (line,) = json_lines(done.stdout)
    assert line["exit_code"] == 2 and said in line["summary"]
    assert fake_openai.requests == []  # nothing was asked


def test_at_a_file_named_from_the_project_root_when_run_from_elsewhere(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    """`--root` given, the current folder another one (a CI job's checkout folder): a relative
    FILE that is not there but is in the project is the project's file."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    fake_openai.default_reply = Reply("Done.")
    done = agent_lsp(
        "run", "--at", "calc.py:10", "look", "--root", str(project), env=server_env, cwd=elsewhere
    )
    assert "Traceback" not in done.stderr
    assert "is not in the project" not in done.stderr, done.stderr
    first = next(m["content"] for m in fake_openai.requests[0]["messages"] if m["role"] == "user")
    assert "The user's cursor is in calc.py on line 10:" in first, first
