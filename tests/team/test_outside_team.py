"""Team mode from outside, with what the user points at and as JSON lines: `agentLsp.runTask`
with a `range` and `"team": true` over a real LSP client, and `agent-lsp run --team` with `--at`
and `--json` as a subprocess; the fake model scripted per role."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.fakes.openai_server import FakeOpenAIServer
from tests.team.conftest import AREA, COMMANDER, PERIMETER, PLANNER, TASK
from tests.team.helpers import first_user, requests_of, script_feature
from tests.test_cli import agent_lsp

SELECTED = "The user selected this in area.py, lines 1-2:\n```\ndef square_area(side):\n"


async def test_run_task_in_team_mode_tells_the_commander_and_planner_the_selection(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    script_feature(fake_openai)
    async with editor_session("vscode", shapes, server_env) as client:
        uri = client.open(shapes / "area.py")
        lines_1_2 = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}
        arguments = [{"task": TASK, "team": True, "uri": uri, "range": lines_1_2}]
        started = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.runTask", arguments=arguments)
        )
        assert isinstance(started, dict) and "taskId" in started, started
        await client.wait_for_message("agent-lsp: completed", timeout=120)
    (commander,) = requests_of(fake_openai, COMMANDER)
    assert SELECTED in first_user(commander), first_user(commander)
    (planner,) = requests_of(fake_openai, PLANNER)
    assert SELECTED in first_user(planner), first_user(planner)


def test_run_team_at_a_selection_tells_the_commander(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    script_feature(fake_openai)
    done = agent_lsp(
        "run", "--team", "--at", "area.py:1-2", TASK, "--root", str(shapes), env=server_env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (commander,) = requests_of(fake_openai, COMMANDER)
    assert SELECTED in first_user(commander), first_user(commander)
    assert (shapes / "area.py").read_text() == AREA


def test_run_team_json_prints_json_lines_and_the_outcome_last(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    script_feature(fake_openai)
    done = agent_lsp("run", "--team", "--json", TASK, "--root", str(shapes), env=server_env)
    assert "Traceback" not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # every line parses
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = lines[-1]
    assert (outcome["type"], outcome["status"], outcome["exit_code"]) == (
        "outcome",
        "completed",
        0,
    ), outcome
    assert outcome["verified"] is True
    assert sorted(outcome["changed_files"]) == ["area.py", "perimeter.py"]
    assert [(s["id"], s["status"]) for s in outcome["plan"]] == [("s1", "done"), ("s2", "done")]
    assert outcome["tokens_by_role"]["planner"] == 120, outcome
    kinds = [line["type"] for line in lines]
    assert kinds.count("outcome") == 1
    edits = sorted(line["path"] for line in lines if line["type"] == "edit")
    assert edits == ["area.py", "perimeter.py"]
    assert "model_call" in kinds and "tool_call" in kinds
    assert (shapes / "perimeter.py").read_text() == PERIMETER
