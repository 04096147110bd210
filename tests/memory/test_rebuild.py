"""The starting context: state files, rules, init.d steps, validation; rebuilt at task start,
after a compaction and on resume; broken or hand-edited files are WARN lines, never a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.memory.initd import InitRunner, TaskFacts
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.rules import load_rules
from agent_lsp.memory.state import record_files
from agent_lsp.messages import TaskStatus
from agent_lsp.safety.policy import ALLOW_ONCE, DENY
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.memory.helpers import system_of
from tests.test_agent import make_session

TASK = Task(kind=TaskKind.TASK, instruction="make greet() say hello", path="app.py")


def call(name: str, **args: object) -> Reply:
    return Reply(tool_calls=[ToolCall(name, args)])


async def test_after_a_compaction_the_rebuild_gives_back_the_goal_and_the_next_step(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    (plain / "big.txt").write_text("".join(f"filler {i} " + "x" * 60 + "\n" for i in range(400)))
    goal = "Make greet() say 'hello NAME'; keep the signature"
    step = "edit app.py line 2, then read README.md for the wording"
    fake_openai.script(
        call("update_task", section="goal", content=goal),
        call("update_task", section="Next step", content=step),
        call("read_file", path="big.txt"),
        *(call("read_file", path=p) for p in ("README.md", "app.py") * 6),
        Reply("Done."),
    )
    channel = RecordingChannel()
    session = make_session(
        plain,
        fake_openai.base_url,
        model={"contextWindow": 9000, "baseUrl": fake_openai.base_url, "profile": "full"},
    )
    outcome = await session.run_task(TASK, channel)
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED

    first = system_of(fake_openai.requests[0])
    assert "Starting context" not in first  # a fresh project: nothing to add at the start
    rebuilt = [r for r in fake_openai.requests if "rebuilt after the conversation" in system_of(r)]
    assert rebuilt, "no request after a compaction"
    request = rebuilt[0]
    masked = [m for m in request["messages"] if str(m.get("content")).startswith("[compacted")]
    assert masked and "update_task" in masked[0]["content"]  # its result is gone from history
    context = system_of(request).split("## Starting context")[1].split("TASK STATE>>>")[0]
    assert (
        "### Current task (.agent-lsp/state/task/current-task.md; keep it current with "
        f"update_task)\n## goal\n{goal}\n## next\n{step}\n" in context
    )
    assert context.rstrip().endswith("Before your first action, restate the task in one line.")
    events = [e.message for e in channel.events]
    assert any(m.endswith("old outputs masked; starting context rebuilt") for m in events)
    state = (plain / ".agent-lsp/state/task/current-task.md").read_text()
    assert state.startswith(f"# Current task\n\n## goal\n{goal}\n\n## next\n{step}\n\n")


def init_commands(log: Path) -> list[dict[str, Any]]:
    """The init.d steps the session log says were run or refused."""
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [e for e in entries if e["kind"] == "command" and e["source"] == "init"]


def write_step(folder: Path, name: str, body: str, executable: bool = True) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755 if executable else 0o644)


async def test_rules_state_and_project_steps_reach_the_model(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    (plain / "AGENTS.md").write_text("Root rule: run ruff before committing.\n")
    (plain / "pkg").mkdir()
    (plain / "pkg" / "AGENTS.md").write_text("Package rule: no I/O at import time.\n")
    (plain / "pkg" / "tool.py").write_text("X = 1\n")
    state = plain / ".agent-lsp" / "state" / "project"
    state.mkdir(parents=True)
    (state / "conventions.md").write_text(
        "- Strings use single quotes (reason: the existing code does).\n"
    )
    initd = plain / ".agent-lsp" / "init.d"
    initd.mkdir()
    write_step(initd, "S05-db.sh", 'echo "db: migrations current ($AGENT_LSP_REASON)"')
    write_step(initd, "S50-fails.sh", "echo 'cannot reach the cache' >&2; exit 3")
    write_step(initd, "S60-denied.sh", "echo never")
    write_step(initd, "S70-plain.sh", "echo never", executable=False)
    (initd / "README.md").write_text("not a step\n")

    fake_openai.script(Reply("Nothing to do."))
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE, ALLOW_ONCE, DENY]
    session = make_session(plain, fake_openai.base_url)
    session.safety.engine.trusted = True  # project steps run only in a trusted workspace
    task = Task(kind=TaskKind.TASK, instruction="tidy pkg/tool.py", path="pkg/tool.py")
    outcome = await session.run_task(task, channel)
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED

    context = system_of(fake_openai.requests[0]).split("## Starting context, rebuilt at ")[1]
    order = [
        "WARN init.d/S70-plain.sh: not executable (chmod +x); skipped",
        "WARN init.d/S50-fails.sh: exit code 3: cannot reach the cache",
        "WARN init.d/S60-denied.sh: not run (user: denied)",
        "### init.d/S05-db.sh\ndb: migrations current (start)",  # S05 runs before S10
        "### Project rules: pkg/AGENTS.md\nPackage rule: no I/O at import time.",
        "### Project rules: AGENTS.md\nRoot rule: run ruff before committing.",
        "### Project state: conventions.md\n- Strings use single quotes (reason: the existing",
        "Before your first action, restate the task in one line.",
    ]
    positions = [context.index(text) for text in order[3:]]
    assert positions == sorted(positions)
    for text in order[:3]:
        assert text in context
    assert "never" not in context
    warns = [e.message for e in channel.events if e.message.startswith("WARN")]
    assert warns == [f"WARN {w.removeprefix('WARN ')}" for w in order[:3]]
    commands = init_commands(session.log_path)
    assert [(c["command"], c["decided_by"], c["exit_code"]) for c in commands] == [
        (".agent-lsp/init.d/S05-db.sh", "user: allow once", 0),
        (".agent-lsp/init.d/S50-fails.sh", "user: allow once", 3),
        (".agent-lsp/init.d/S60-denied.sh", "user: denied", None),
    ]


def test_rules_files_nearest_first_within_the_cap(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".github").mkdir()
    (tmp_path / "CLAUDE.md").write_text("claude rules\n")
    (tmp_path / ".github" / "copilot-instructions.md").write_text("copilot rules\n")
    (tmp_path / "a" / ".cursorrules").write_text("cursor rules\n")
    (tmp_path / "a" / "b" / "AGENTS.md").write_text("x" * 50 + "\n")
    warnings: list[str] = []
    rules = load_rules(tmp_path, "a/b/c.py", warnings, cap=70)
    assert [rel for rel, _ in rules] == [
        "a/b/AGENTS.md",
        "a/.cursorrules",
        "CLAUDE.md",
        ".github/copilot-instructions.md",
    ]
    assert rules[1][1] == "cursor rules"
    assert rules[2][1] == "claude r\n[... truncated; read_file CLAUDE.md for the rest]"
    assert rules[3][1].startswith("[not loaded: over the 70-character rules budget")
    assert [rel for rel, _ in load_rules(tmp_path, None, warnings)] == [
        "CLAUDE.md",
        ".github/copilot-instructions.md",
    ]


async def test_validation_puts_conflicts_first_and_the_steps_are_idempotent(
    plain: Path,
) -> None:
    layout = Layout(plain)
    layout.mount()
    (plain / ".git").mkdir()
    (plain / ".git" / "HEAD").write_text("ref: refs/heads/feature\n")
    state = (
        "# Current task\n\nstray words\n\n## Goal\nRename utils/parser.js to lib/parse.js\n\n"
        "## next\nupdate app.py and gone.py\n\n## Notes\nsee docs/plan.md\n"
    )
    layout.task_file.write_text(state)
    recorded = [plain / "utils/parser.js", plain / "gone.py", plain / "docs/plan.md"]
    for path in recorded:
        path.parent.mkdir(exist_ok=True)
        path.write_text("x\n")
    record_files(layout, state)  # as it was written: these were files, lib/parse.js was none
    for path in recorded:
        path.unlink()
    initd = layout.initd
    initd.mkdir()
    write_step(initd, "S35-count.sh", 'echo "run $AGENT_LSP_REASON"')
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE]
    runner = InitRunner(layout, TaskFacts(goal="rename", branch="main"), channel)

    first = await runner.run("resume")
    again = await runner.run("compaction")  # the user is not asked twice for one step

    assert channel.answers == []
    assert (
        first.conflicts
        == again.conflicts
        == [
            "the task state refers to utils/parser.js, which does not exist (renamed or deleted?)",
            "the task state refers to gone.py, which does not exist (renamed or deleted?)",
            "the task state refers to docs/plan.md, which does not exist (renamed or deleted?)",
            "the branch changed from main to feature since the task started",
        ]
    )
    assert first.warnings == [
        ".agent-lsp/state/task/current-task.md: text outside the ## sections was ignored",
        ".agent-lsp/state/task/current-task.md: unknown section 'Notes' kept as written",
    ]
    lines = first.context.splitlines()
    assert (
        lines[0] == "## Starting context, rebuilt after a restart: the task resumes from its "
        "checkpoint"
    )
    assert lines[2] == "CONFLICTS - resolve or confirm these before acting:"
    assert "### init.d/S35-count.sh\nrun resume" in first.context
    assert "### init.d/S35-count.sh\nrun compaction" in again.context
    assert "## goal\nRename utils/parser.js to lib/parse.js\n## next\n" in first.context


async def test_broken_state_files_are_warnings_not_crashes(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    base = plain / ".agent-lsp"
    for folder in ("state/project", "state/task", "memory", "checkpoints/deadbeef"):
        (base / folder).mkdir(parents=True)
    (base / "state/project/conventions.md").write_bytes(b"\x00\x01\x02garbage")
    (base / "state/project/naming.md").write_text("- snake_case (reason: PEP 8)\n")
    (base / "state/task/task.json").write_text("{not json")
    (base / "state/task/current-task.md").write_bytes(b"## goal\n\xff\xfe old goal\n")
    index = Layout(plain).index  # the user's own index of this workspace, broken
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_bytes(b"this is not a database, just text" * 40)
    (base / "memory/2026-01-01--broken.md").write_bytes(b"\x00\x00\x00")
    (base / "memory/2026-01-02--greet-rule.md").write_text("greet must say hi\n")
    (base / "checkpoints/deadbeef/progress.json").write_text("{")

    fake_openai.script(Reply("greet is fine."))
    channel = RecordingChannel()
    session = make_session(plain, fake_openai.base_url)
    outcome = await session.run_task(Task(kind=TaskKind.TASK, instruction="check greet"), channel)
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED

    warns = [e.message for e in channel.events if e.message.startswith("WARN")]
    expected = [
        "checkpoints/deadbeef/progress.json: ignored: not signed by agent-lsp for this user",
        ".agent-lsp/state/task/task.json: not valid JSON",
        ".agent-lsp/state/task/current-task.md: not valid UTF-8",
        "memory/index.sqlite: unusable (file is not a database); rebuilt from the files",
        "memory/2026-01-01--broken.md: looks corrupted (binary data); ignored",
        ".agent-lsp/state/project/conventions.md: looks corrupted (binary data); ignored",
    ]
    assert len(warns) == len(expected)
    for warn, text in zip(warns, expected, strict=True):
        assert warn.startswith(f"WARN {text}"), warn
    system = system_of(fake_openai.requests[0])
    assert "WARN .agent-lsp/state/project/conventions.md: looks corrupted" in system
    assert "### Project state: naming.md\n- snake_case (reason: PEP 8)" in system
    assert "greet-rule" in system  # the readable experience is still found
    assert (
        (base / "state/task/current-task.md")
        .read_text()
        .startswith(
            "# Current task\n\n## goal\ncheck greet\n\n### definition of done\n"
            "- tests: none (no test runner found): the result cannot be verified\n\n"
            "## outcome\ncompleted after 1 steps"
        )
    )


async def test_project_steps_are_decided_by_the_tasks_own_policy(
    plain: Path, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deny rule in the project's policy stops a step without asking; an allow rule (in a
    trusted workspace, here: the user's config) lets one run without asking."""
    initd = plain / ".agent-lsp" / "init.d"
    initd.mkdir(parents=True)
    write_step(initd, "S05-seed.sh", "echo seeded")
    write_step(initd, "S06-wipe.sh", "echo wiped")
    (plain / ".agent-lsp" / "policy.toml").write_text(
        '[[deny]]\ncommand = ".agent-lsp/init.d/S06-wipe.sh"\nreason = "never wipe"\n'
    )
    monkeypatch.setenv("HOME", str(plain.parent / "home"))
    config = plain.parent / "home" / ".config" / "agent-lsp"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        '[[policy.allow]]\ncommand = ".agent-lsp/init.d/S05-seed.sh"\n'
    )
    fake_openai.script(Reply("Nothing to do."))
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE, ALLOW_ONCE]  # would let both run if anything asked
    session = make_session(plain, fake_openai.base_url)
    session.safety.engine.trusted = True  # project steps run only in a trusted workspace
    task = Task(kind=TaskKind.TASK, instruction="tidy app.py", path="app.py")
    outcome = await session.run_task(task, channel)
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    context = system_of(fake_openai.requests[0])
    assert "### init.d/S05-seed.sh\nseeded" in context
    assert "wiped" not in context
    assert channel.answers == [ALLOW_ONCE, ALLOW_ONCE]  # nobody was asked
    commands = init_commands(session.log_path)
    decided = {c["command"]: (c["decided_by"], c["exit_code"]) for c in commands}
    assert decided[".agent-lsp/init.d/S05-seed.sh"][1] == 0
    assert decided[".agent-lsp/init.d/S05-seed.sh"][0].startswith("policy: user config ")
    assert decided[".agent-lsp/init.d/S06-wipe.sh"][1] is None
    assert decided[".agent-lsp/init.d/S06-wipe.sh"][0] == (
        "policy: denied (.agent-lsp/policy.toml deny #1: deny command "
        "'.agent-lsp/init.d/S06-wipe.sh')"
    )


async def test_an_untrusted_workspace_runs_none_of_its_steps(
    plain: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    initd = plain / ".agent-lsp" / "init.d"
    initd.mkdir(parents=True)
    write_step(initd, "S05-evil.sh", f"echo ran > {canary}")
    fake_openai.script(Reply("Nothing to do."))
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE]
    session = make_session(plain, fake_openai.base_url)
    assert not session.safety.trusted
    await session.run_task(Task(kind=TaskKind.TASK, instruction="look"), channel)
    await session.aclose()
    assert not canary.exists() and channel.answers == [ALLOW_ONCE]  # not even asked
    context = system_of(fake_openai.requests[0])
    assert "init.d: the project's steps run only in a trusted workspace" in context


async def test_an_init_d_folder_linked_out_of_the_workspace_is_not_run(
    plain: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_step(elsewhere, "S05-evil.sh", f"echo ran > {canary}")
    (plain / ".agent-lsp").mkdir(exist_ok=True)
    (plain / ".agent-lsp" / "init.d").symlink_to(elsewhere, target_is_directory=True)
    fake_openai.script(Reply("Nothing to do."))
    channel = RecordingChannel()
    channel.answers = [ALLOW_ONCE]
    session = make_session(plain, fake_openai.base_url)
    session.safety.engine.trusted = True
    await session.run_task(Task(kind=TaskKind.TASK, instruction="look"), channel)
    await session.aclose()
    assert not canary.exists()
    assert "init.d: not run (a link leading out of the workspace)" in system_of(
        fake_openai.requests[0]
    )
