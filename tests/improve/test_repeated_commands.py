"""A command `run_command` ran in three different tasks becomes a suggestion at the third task's
end (`agent-lsp run`'s output), said once, never applied; a project tool that runs it already
is not suggested; the record stays bounded."""

from __future__ import annotations

import json
from pathlib import Path

from agent_lsp.memory.commands import MAX_COMMANDS, normalise, record_commands
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.records import read_signed
from tests.test_cli import agent_lsp

SUGGESTION = (
    "`echo ready` ran in 3 tasks: "
    '`agent-lsp improve "add a tool for echo ready"` makes it a project tool'
)


def test_a_command_run_in_three_tasks_is_suggested_once_as_a_project_tool(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "README.md").write_text("nothing to test\n")
    outputs: list[str] = []
    for spelling in ("echo ready", "echo   ready", "'echo' ready"):
        fake_openai.script(
            Reply(tool_calls=[ToolCall("run_command", {"command": spelling})]), Reply("Done.")
        )
        done = agent_lsp("run", "check it", "--max-steps", "3", "--root", str(root), env=server_env)
        assert "Traceback" not in done.stderr, done.stderr
        assert "← run_command: success" in done.stdout, done.stdout
        outputs.append(done.stdout)
    assert [SUGGESTION in out for out in outputs] == [False, False, True]
    assert outputs[2].index(SUGGESTION) < outputs[2].index("■ ")  # before the outcome line
    assert not (root / ".agent-lsp" / "tools.toml").exists()  # never applied
    record = read_signed(root / ".agent-lsp" / "cache" / "commands.json", "commands")
    assert list(record["commands"]) == ["echo ready"]
    assert len(record["commands"]["echo ready"]) == 3 and record["suggested"] == ["echo ready"]
    # once: a fourth task says nothing more
    assert record_commands(root, "task-4", ["echo ready"]) == []


def test_a_project_tool_covers_its_command_and_the_record_is_bounded(tmp_path: Path) -> None:
    tool = ["docker", "compose", "up", "-d", "{service}"]
    command = normalise("docker compose up -d db")
    for task in ("a", "b"):
        assert record_commands(tmp_path, task, [command], [tool]) == []
    assert record_commands(tmp_path, "c", [command], [tool]) == []  # a tool runs it already
    assert record_commands(tmp_path, "a", ["make"]) == []
    assert record_commands(tmp_path, "a", ["make"]) == []  # the same task twice is one task
    assert record_commands(tmp_path, "b", ["make"]) == []
    assert len(record_commands(tmp_path, "c", ["make"])) == 1
    record_commands(tmp_path, "t", [f"cmd{n}" for n in range(MAX_COMMANDS + 20)])
    path = tmp_path / ".agent-lsp" / "cache" / "commands.json"
    kept = read_signed(path, "commands")["commands"]
    assert len(kept) == MAX_COMMANDS and "cmd0" not in kept and f"cmd{MAX_COMMANDS + 19}" in kept


def test_a_shipped_commands_record_is_ignored_and_said(tmp_path: Path) -> None:
    """A repository ships a record where a command already ran in two tasks: the user's first
    run of it suggests nothing; the file is said to be ignored, then kept signed."""
    path = tmp_path / ".agent-lsp" / "cache" / "commands.json"
    path.parent.mkdir(parents=True)
    planted = {"version": 1, "commands": {"make deploy": ["x", "y"]}, "suggested": []}
    path.write_text(json.dumps(planted))
    said = record_commands(tmp_path, "mine", ["make deploy"])
    assert said == [
        ".agent-lsp/cache/commands.json: ignored: not signed by agent-lsp for this user "
        "(a file the project brought?); started afresh"
    ]
    assert read_signed(path, "commands")["commands"] == {"make deploy": ["mine"]}
    assert record_commands(tmp_path, "mine-2", ["make deploy"]) == []
