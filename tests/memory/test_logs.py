"""Session logs: every model call, tool call, command, file change and memory update, stamped
with its time and source; `agent-lsp log` renders them, follow mode included."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agent_lsp.cli import memory as commands
from agent_lsp.memory import logs
from agent_lsp.memory.logs import SessionLog
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.memory.helpers import log_entries
from tests.test_agent import make_session
from tests.test_cli import agent_lsp


def call(name: str, **args: object) -> Reply:
    return Reply(tool_calls=[ToolCall(name, args)], usage=(120, 8))


async def test_the_session_log_records_everything_with_time_and_source(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(
        call("run_command", command="ls"),
        call("remember", note="greet() output is user-facing (keep it short)", tags=["ux"]),
        call("update_task", section="progress", content="looked around"),
        call("edit_file", path="app.py", old_text="'hi '", new_text="'hello '"),
        Reply("Done.", usage=(200, 5)),
    )
    session = make_session(plain, fake_openai.base_url)
    task = Task(kind=TaskKind.TASK, instruction="say hello")
    outcome = await session.run_task(task, RecordingChannel())
    await session.aclose()

    entries = log_entries(session.log_path)
    assert session.log_path.parent == plain / ".agent-lsp" / "logs"
    assert all(e["ts"].endswith("Z") and e["source"] for e in entries)
    assert entries[0]["kind"] == "session" and entries[0]["root"] == str(plain.resolve())
    by_kind: dict[str, list[dict[str, object]]] = {}
    for e in entries:
        by_kind.setdefault(e["kind"], []).append(e)
    models = by_kind["model_call"]
    assert [(m["prompt_tokens"], m["completion_tokens"]) for m in models] == [(120, 8)] * 4 + [
        (200, 5)
    ]
    assert all(isinstance(m["latency_ms"], int) for m in models)
    assert [t["tool"] for t in by_kind["tool_call"]] == [
        "run_command",
        "remember",
        "update_task",
        "edit_file",
    ]
    [command] = by_kind["command"]
    assert (command["command"], command["cwd"], command["decided_by"], command["source"]) == (
        "ls",
        str(plain.resolve()),
        "policy: read-only",
        "policy",
    )
    assert [(m["action"], m["path"]) for m in by_kind["memory"]] == [
        ("note kept", ".agent-lsp/memory/notes.md"),
        ("task state updated", ".agent-lsp/state/task/current-task.md"),
    ]
    [change] = by_kind["file_change"]
    assert (change["path"], change["tool"], change["step"]) == ("app.py", "edit_file", 4)
    [end] = by_kind["task_end"]
    assert (end["status"], end["steps"], end["task_id"]) == ("completed", 5, outcome.task_id)

    rendered = [logs.render(line) for line in session.log_path.read_text().splitlines()]
    assert not any("unreadable" in line for line in rendered)
    assert any(" model  [ 1] model: 120 in / 8 out tokens, " in line for line in rendered)
    assert any(
        line.endswith(f"$ ls  (in {plain.resolve()}; policy: read-only; exit 0)")
        for line in rendered
    )
    assert any(line.endswith("[ 4] changed app.py (edit_file)") for line in rendered)


def test_follow_prints_the_log_and_new_lines_as_they_come(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = SessionLog(tmp_path / ".agent-lsp" / "logs", "20260101-000000-abcdef")
    log.record("task_start", "agent", task_id="t1", title="first")

    def later() -> None:
        time.sleep(0.3)
        log.record("memory", "user", action="forgotten", path="memory/x.md")

    writer = threading.Thread(target=later)
    writer.start()
    assert commands.show_log(tmp_path, follow=True, stop_when_idle=1.0) == 0
    writer.join()
    out = capsys.readouterr().out.splitlines()
    assert [line[9:] for line in out] == [
        "agent  task t1 started: first",
        "user   memory: forgotten memory/x.md",
    ]
    with (tmp_path / ".agent-lsp/logs/20260101-000000-abcdef.jsonl").open("a") as fh:
        fh.write("not json\n")
    assert commands.show_log(tmp_path, session="abcdef") == 0
    assert capsys.readouterr().out.splitlines()[-1] == "(unreadable log line) not json"


def test_log_and_memory_from_the_command_line(plain: Path, server_env: dict[str, str]) -> None:
    memory = plain / ".agent-lsp" / "memory"
    memory.mkdir(parents=True)
    (memory / "2026-03-01--greet-wording.md").write_text(
        "# Greet wording\n\n- tags: ux\n- files: app.py\n\n## Goal\nKeep greet() short.\n"
    )
    listed = agent_lsp("memory", "list", "--root", str(plain), env=server_env)
    assert listed.stdout == "2026-03-01--greet-wording.md  -  Greet wording  [ux]\n"
    found = agent_lsp("memory", "search", "greet says hello", "--root", str(plain), env=server_env)
    assert found.stdout.startswith("- Greet wording (2026-03-01--greet-wording.md). Goal: Keep")
    shown = agent_lsp("memory", "show", "greet", "--root", str(plain), env=server_env)
    assert "## Goal\nKeep greet() short." in shown.stdout
    gone = agent_lsp("memory", "forget", "greet", "--root", str(plain), env=server_env)
    assert gone.stdout == "forgot 2026-03-01--greet-wording.md\n"
    assert not any(memory.glob("*--*.md"))
    missing = agent_lsp("memory", "show", "greet", "--root", str(plain), env=server_env)
    assert missing.returncode == 1 and "no experience matches 'greet'" in missing.stderr

    shown_log = agent_lsp("log", "--root", str(plain), env=server_env)
    assert shown_log.returncode == 0
    assert shown_log.stdout.splitlines()[-1].endswith(
        "user   memory: forgotten .agent-lsp/memory/2026-03-01--greet-wording.md"
    )
    listing = agent_lsp("log", "--list", "--root", str(plain), env=server_env)
    assert listing.stdout.count(" events\n") == 1
