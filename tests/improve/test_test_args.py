"""`tests.args` set by an improvement ("always pass -p no:randomly"): the self-check dry-runs the
tests with the arguments, the next task's `run_tests` runs pytest with them, and an argument
pytest refuses rolls the improvement back with every file as it was."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.improve.test_cli import propose, snapshot, tool_results
from tests.test_cli import agent_lsp

SEES_ARGS = """\
import sys


def test_sees_the_extra_arguments():
    assert "no:randomly" in sys.argv, sys.argv
"""


def test_an_improvement_sets_tests_args_and_the_next_run_passes_them(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    (project / "tests" / "test_args.py").write_text(SEES_ARGS)
    args = ["-p", "no:randomly"]
    fake_openai.script(
        propose(summary="always -p no:randomly", config=[{"key": "tests.args", "value": args}]),
        Reply("Proposed."),
    )
    fake_openai.default_reply = Reply("done.")
    request = "when you run the tests here, always pass -p no:randomly"
    done = agent_lsp("improve", request, "--yes", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '+args = ["-p", "no:randomly"]' in done.stdout
    # the dry run ran the suite with the arguments: the test that needs them passed
    assert "dry run of the tests (pytest): 2 passed, 1 failed" in done.stdout
    config = (project / ".agent-lsp" / "config.toml").read_text()
    assert f"args = {json.dumps(args)}" in config

    fake_openai.requests.clear()
    fake_openai.script(Reply(tool_calls=[ToolCall("run_tests", {})]), Reply("Ran them."))
    run = agent_lsp(
        "run", "run the tests", "--max-steps", "2", "--root", str(project), env=server_env
    )
    assert "Traceback" not in run.stderr
    [result] = tool_results(fake_openai.requests[1])
    assert "2 passed, 1 failed" in result, result
    assert "test_average" in result and "test_sees_the_extra_arguments" not in result

    # a bad argument: the dry run fails, the improvement is rolled back byte for byte
    before = snapshot(project)
    fake_openai.requests.clear()
    fake_openai.script(
        propose(summary="bad", config=[{"key": "tests.args", "value": ["--no-such-flag"]}]),
        Reply("Proposed."),
    )
    bad = agent_lsp(
        "improve", "pass --no-such-flag", "--yes", "--root", str(project), env=server_env
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "■ improvement rolled back, nothing changed: the dry run of the tests" in bad.stdout
    assert "Traceback" not in bad.stderr
    after = snapshot(project)
    assert kept(after) == kept(before)
    assert after[".agent-lsp/config.toml"] == before[".agent-lsp/config.toml"]


def kept(files: dict[str, bytes]) -> dict[str, bytes]:
    """The project's files and what improve writes (not the task's own state and logs)."""
    ours = (".agent-lsp/config.toml", ".agent-lsp/improvements/", ".agent-lsp/tool")
    return {k: v for k, v in files.items() if not k.startswith(".agent-lsp/") or k.startswith(ours)}
