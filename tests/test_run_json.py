"""`agent-lsp run --json` as CI runs it: a subprocess, the fake model over HTTP, real pytest;
stdout is JSON lines only — the events, the model calls with their tokens, the tool calls with
their status, the edit with its diff, the test verdict — and the outcome with the process's exit
code last; bad input is a JSON outcome too, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import BUG, FIX
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.scripts import fix_average_script
from tests.test_cli import agent_lsp


def run_json(*args: str, env: dict[str, str]) -> tuple[int, list[dict[str, Any]], str]:
    done = agent_lsp("run", "--json", *args, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON
    return done.returncode, lines, done.stderr


def test_a_completed_task_as_json_lines(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    code, lines, _ = run_json("make the failing test pass", "--root", str(project), env=server_env)
    assert code == 0
    assert (project / "calc.py").read_text().count(FIX) == 1  # written on disk, as `run` does
    kinds = [line["type"] for line in lines]
    outcome = lines[-1]
    assert kinds[-1] == "outcome" and kinds.count("outcome") == 1
    assert outcome["status"] == "completed" and outcome["exit_code"] == 0
    assert outcome["verified"] is True and outcome["changed_files"] == ["calc.py"]
    assert outcome["model_calls"] == 4 == kinds.count("model_call")
    calls = [line for line in lines if line["type"] == "model_call"]
    assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 for c in calls), calls
    assert outcome["prompt_tokens"] == sum(c["prompt_tokens"] for c in calls)
    tools = [(t["tool"], t["status"]) for t in lines if t["type"] == "tool_call"]
    assert ("read_file", "success") in tools and ("run_tests", "success") in tools
    (edit,) = [line for line in lines if line["type"] == "edit"]
    assert edit["path"] == "calc.py" and edit["created"] is False
    diff = edit["diff"].splitlines(keepends=True)
    assert diff[:2] == ["--- a/calc.py\n", "+++ b/calc.py\n"], diff
    assert f"-{BUG}" in diff and f"+{FIX}" in diff, diff
    started = [e for e in lines if e["type"] == "event" and e["kind"] == "started"]
    assert started and started[0]["message"] == "started: make the failing test pass"
    # the events come in the order they happened: the edit before the tests that proved it
    assert kinds.index("edit") < max(i for i, k in enumerate(kinds) if k == "tool_call")


def test_a_task_not_done_has_exit_code_1_in_its_outcome(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply("Done!"), Reply("Really done!"))
    code, lines, _ = run_json("fix it", "--root", str(project), "--max-steps", "2", env=server_env)
    assert code == 1
    outcome = lines[-1]
    assert (outcome["type"], outcome["status"], outcome["exit_code"]) == ("outcome", "failed", 1)
    assert outcome["summary"].startswith("stopped: the model did not continue")
    assert (project / "calc.py").read_text().count(BUG) == 1


def test_bad_input_is_a_json_outcome(tmp_path: Path, server_env: dict[str, str]) -> None:
    code, lines, stderr = run_json("fix it", "--root", str(tmp_path / "nowhere"), env=server_env)
    assert code == 2
    assert lines == [
        {
            "type": "outcome",
            "status": "error",
            "summary": f"agent-lsp: {tmp_path / 'nowhere'} is not a folder",
            "exit_code": 2,
        }
    ]
    assert "is not a folder" in stderr


def test_a_model_reply_with_escape_sequences_reaches_no_terminal(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply("\x1b]52;c;ZXZpbA==\x07done\x1b[2K"), Reply("still \x1b[2J"))
    done = agent_lsp("run", "--json", "fix it", "--root", str(project), env=server_env)
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert "\x1b[2J" in outcome["summary"]  # the text itself is kept, as JSON escapes
