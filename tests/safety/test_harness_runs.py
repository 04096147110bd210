"""The one gate for the programs the harness starts itself, through the real CLI (a subprocess,
the real openai client against the scripted fake model, real pytest): without an OS sandbox an
improvement's dry run of the tests and `agent-lsp test` ask before the repository's
`conftest.py` runs with your rights — `--yes` answers the patch, never that question — and
only the user's own allow rule answers it for them. A canary folder beside the workspace shows
what ran."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest
from lsprotocol import types as t

from agent_lsp.safety.policy import ALLOW_ONCE, DENY
from tests.e2e.editor_client import editor_session
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.improve.test_cli import propose, tool_results
from tests.test_cli import agent_lsp

# The repository's conftest writes beside the workspace when it can (without a sandbox).
CONFTEST = """\
from pathlib import Path

try:
    Path({canary!r}).write_text("conftest ran with your rights")
except OSError:
    pass
"""


def user_config(env: dict[str, str], text: str) -> None:
    config = Path(env["HOME"]) / ".config" / "agent-lsp" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


NO_SANDBOX = "[sandbox]\nenabled = false\n"


@pytest.fixture
def canary(project: Path) -> Path:
    outside = project.parent / "outside"
    outside.mkdir()
    path = outside / "pwned"
    (project / "conftest.py").write_text(CONFTEST.format(canary=str(path)))
    return path


def test_an_improvement_of_the_test_timeout_does_not_run_the_repository_unasked(
    project: Path, canary: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    user_config(server_env, NO_SANDBOX)  # and the workspace is not trusted
    fake_openai.script(propose(config=[{"key": "tests.timeout", "value": 300}]), Reply("Proposed."))
    fake_openai.default_reply = Reply("done.")
    done = agent_lsp(
        "improve", "more time for the tests", "--yes", "--root", str(project), env=server_env
    )
    assert "Traceback" not in done.stderr
    assert not canary.exists(), "the dry run ran the repository's conftest.py unasked"
    assert done.returncode == 1, done.stdout + done.stderr
    assert "? agent-lsp wants to use the tool run_tests" in done.stdout
    assert "no OS sandbox" in done.stdout
    assert "the dry run of the tests did not run: the tests were not run" in done.stdout
    assert not (project / ".agent-lsp" / "config.toml").exists()  # rolled back


def test_inside_the_sandbox_the_dry_run_runs_confined(
    project: Path, canary: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(propose(config=[{"key": "tests.timeout", "value": 300}]), Reply("Proposed."))
    fake_openai.default_reply = Reply("done.")
    done = agent_lsp(
        "improve", "more time for the tests", "--yes", "--root", str(project), env=server_env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dry run of the tests (pytest):" in done.stdout
    assert "wants to use the tool run_tests" not in done.stdout  # nothing to ask
    assert not canary.exists()  # the file system outside is read-only in there


def test_agent_lsp_test_without_a_sandbox_asks_first(
    project: Path, canary: Path, server_env: dict[str, str]
) -> None:
    user_config(server_env, NO_SANDBOX)
    done = agent_lsp("test", "--root", str(project), env=server_env)
    assert "Traceback" not in done.stderr
    assert not canary.exists(), "agent-lsp test ran the repository's conftest.py unasked"
    assert done.returncode == 1, done.stdout + done.stderr
    assert "? agent-lsp wants to use the tool run_tests" in done.stdout
    assert "agent-lsp test: the tests were not run: no answer" in done.stderr
    as_json = agent_lsp("test", "--json", "--root", str(project), env=server_env)
    report = json.loads(as_json.stdout)  # the question went to stderr: stdout is one object
    assert report["ok"] is False and report["exit_code"] == 1
    assert report["error"]["kind"] == "not_permitted"
    assert not canary.exists()


def test_the_question_shows_the_whole_test_command_a_repository_set(
    project: Path, server_env: dict[str, str]
) -> None:
    """An untrusted repository's `tests.command` runs where its scripts.test would: confined,
    or without a sandbox only after the question, which shows the command whole."""
    user_config(server_env, NO_SANDBOX)
    canary = project.parent / "outside-command"
    (project / ".agent-lsp").mkdir(exist_ok=True)
    (project / ".agent-lsp" / "config.toml").write_text(
        f'[tests]\ncommand = "touch {canary} && python -m pytest -q"\n'
    )
    done = agent_lsp("test", "--root", str(project), env=server_env)
    assert "Traceback" not in done.stderr
    assert (
        f"? agent-lsp wants to use the tool run_tests: the project's tests with "
        f"`touch {canary} && python -m pytest -q` (tests.command)"
    ) in done.stdout, done.stdout
    assert done.returncode == 1 and not canary.exists()


def test_the_users_own_allow_rule_answers_for_them(
    project: Path, canary: Path, server_env: dict[str, str]
) -> None:
    user_config(server_env, NO_SANDBOX + '\n[[policy.allow]]\ntool = "run_tests"\n')
    done = agent_lsp("test", "--root", str(project), env=server_env)
    assert "wants to use the tool run_tests" not in done.stdout
    assert "pytest: " in done.stdout, done.stdout + done.stderr
    assert canary.exists()  # the user allowed the unconfined run


# ---- test targets and tests.args: never options that write outside ---------------------------
USES_TMP_PATH = """\
def test_uses_a_temporary_folder(tmp_path):
    (tmp_path / "x").write_text("x")
"""
ALLOW_TESTS = NO_SANDBOX + '\n[[policy.allow]]\ntool = "run_tests"\n'


@pytest.fixture
def sibling(project: Path) -> Path:
    """A folder beside the workspace holding data (pytest's --basetemp empties its folder)."""
    folder = project.parent / "precious"
    folder.mkdir()
    (folder / "data.txt").write_text("keep me")
    (project / "tests" / "test_tmp.py").write_text(USES_TMP_PATH)
    return folder


@pytest.mark.parametrize("sandbox", [False, True])
def test_a_run_tests_target_that_is_an_option_is_refused(
    project: Path,
    sibling: Path,
    sandbox: bool,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    user_config(server_env, '[[policy.allow]]\ntool = "run_tests"\n' if sandbox else ALLOW_TESTS)
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_tests", {"targets": [f"--basetemp={sibling}"]})]),
        Reply(tool_calls=[ToolCall("run_tests", {"targets": ["../precious/data.txt"]})]),
        Reply("Done."),
    )
    fake_openai.default_reply = Reply("done.")
    done = agent_lsp(
        "run", "run the tests", "--max-steps", "3", "--root", str(project), env=server_env
    )
    assert "Traceback" not in done.stderr
    assert (sibling / "data.txt").read_text() == "keep me"
    first, second = (tool_results(fake_openai.requests[n])[-1] for n in (1, 2))
    assert "is an option, not a test id or path" in first, first
    assert "outside the workspace" in second, second


def test_an_improvement_may_not_set_test_arguments_that_write_outside(
    project: Path, sibling: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    user_config(server_env, ALLOW_TESTS)  # the dry run would run unasked
    fake_openai.script(
        propose(config=[{"key": "tests.args", "value": [f"--basetemp={sibling}"]}]),
        Reply("Could not propose it."),
    )
    fake_openai.default_reply = Reply("done.")
    done = agent_lsp(
        "improve", "keep pytest's temp files", "--yes", "--root", str(project), env=server_env
    )
    assert "Traceback" not in done.stderr
    assert (sibling / "data.txt").read_text() == "keep me"
    refused = tool_results(fake_openai.requests[1])[-1]
    assert "not proposed: tests.args: refused:" in refused, refused
    assert "is not an option agent-lsp accepts from a source you did not write" in refused
    assert done.returncode == 1 and not (project / ".agent-lsp" / "config.toml").exists()


def test_an_untrusted_repository_may_not_set_test_arguments_that_write_outside(
    project: Path, sibling: Path, server_env: dict[str, str]
) -> None:
    user_config(server_env, ALLOW_TESTS)
    (project / ".agent-lsp").mkdir()
    (project / ".agent-lsp" / "config.toml").write_text(
        f"[tests]\nargs = [{json.dumps('--basetemp=' + str(sibling))}]\n"
    )
    done = agent_lsp("test", "--root", str(project), env=server_env)
    assert "Traceback" not in done.stderr
    assert "pytest: " in done.stdout, done.stdout + done.stderr  # ran, without the argument
    assert (sibling / "data.txt").read_text() == "keep me"


# ---- a process tree ends for real without a sandbox ------------------------------------------
DEV_SCRIPT = """\
setsid sh -c 'sleep 10; echo left running > {canary}' >/dev/null 2>&1 </dev/null &
echo "  Local:   http://localhost:5173/"
sleep 30
"""


@pytest.mark.parametrize("how", ["readiness", "plain"])
def test_what_a_command_detaches_is_ended_with_it_without_a_sandbox(
    tmp_path: Path, how: str, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    root = tmp_path / "app"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    canary = outside / "canary"
    (root / "dev.sh").write_text(DEV_SCRIPT.format(canary=canary))
    (root / "detach.sh").write_text(DEV_SCRIPT.format(canary=canary).replace("sleep 30", ""))
    scripts = {"dev": "sh dev.sh"}
    (root / "package.json").write_text(json.dumps({"name": "app", "scripts": scripts}))
    command = "npm run dev" if how == "readiness" else "sh detach.sh"
    allow = json.dumps(command)
    user_config(server_env, f"{NO_SANDBOX}\n[[policy.allow]]\ncommand = {allow}\n")
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": command})]), Reply("Done.")
    )
    fake_openai.default_reply = Reply("done.")
    done = agent_lsp("run", "start it", "--max-steps", "2", "--root", str(root), env=server_env)
    assert "Traceback" not in done.stderr
    time.sleep(14)  # the detached child would have written 10 s after it started
    assert not canary.exists(), "a detached child of the command ran on and wrote outside"
    [result] = tool_results(fake_openai.requests[1])
    assert re.search(r"ended \d+ process\(es\) the command left running", result), result
    if how == "readiness":
        assert "started as a readiness check" in result, result


# ---- the editor's own runs: agentLsp.runTests, over real LSP ---------------------------------
async def test_the_editors_test_runs_ask_without_a_sandbox(
    project: Path, canary: Path, server_env: dict[str, str]
) -> None:
    options = {"sandbox": {"enabled": False}}  # the user's own (initializationOptions)
    async with editor_session("vscode", project, server_env, options) as client:
        client.open(project / "calc.py")
        command = t.ExecuteCommandParams(command="agentLsp.runTests", arguments=[])
        assert await client.workspace_execute_command_async(command) == {"status": "started"}
        await client.wait_for_message("agent-lsp: the tests were not run: no answer")
        assert not canary.exists(), "agentLsp.runTests ran the repository's code unasked"
        [question] = client.questions
        assert "no OS sandbox" in question.message
        assert [a.title for a in question.actions or []] == [ALLOW_ONCE, DENY]

        client.messages.clear()
        client.answers = [ALLOW_ONCE]  # yes: for this session's editor runs
        assert await client.workspace_execute_command_async(command) == {"status": "started"}
        await client.wait_for_message("agent-lsp: tests: 1 passed, 1 failed")
        assert canary.exists()
        canary.unlink()
        client.messages.clear()
        assert await client.workspace_execute_command_async(command) == {"status": "started"}
        await client.wait_for_message("agent-lsp: tests: 1 passed, 1 failed")
        assert len(client.questions) == 2  # asked once, not at every run


async def test_the_linters_ask_without_a_sandbox(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    """tsc is the repository's own program (node_modules/.bin): unconfined, it runs with your
    rights like the tests, so it passes the same gate."""
    root = tmp_path / "web"
    (root / "node_modules" / ".bin").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    canary = outside / "pwned"
    tsc = root / "node_modules" / ".bin" / "tsc"
    tsc.write_text(f"#!/bin/sh\necho ran > {canary}\n")
    tsc.chmod(0o755)
    (root / "tsconfig.json").write_text("{}\n")
    (root / "index.ts").write_text("export const x: number = 1;\n")
    options = {"sandbox": {"enabled": False}, "lint": {"enabled": True}}
    async with editor_session("vscode", root, server_env, options) as client:
        uri = client.open(root / "index.ts", "typescript")
        client.text_document_did_save(
            t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
        )
        for _ in range(200):  # a question, or (unasked) the canary
            if client.questions or canary.exists():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(2)
        assert not canary.exists(), "the linters ran the repository's tsc unasked"
        [question] = client.questions
        assert "linters would run unconfined" in question.message
