"""A repository's links never carry a secret into the prompt, and the harness's own writes
under `.agent-lsp/` never follow a link out of the workspace: rules files, state files, memory
notes and experiences that link to `~/.ssh/id_rsa` or `.env`, a linked `.agent-lsp` (or one
of its folders), against a real session and the fake model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_lsp.errors import AgentLspError
from agent_lsp.loop.outputs import OutputKeeper
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.memory.checkpoints import Checkpoint, CheckpointStore
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.logs import SessionLog
from agent_lsp.memory.project import ProjectMemory
from agent_lsp.memory.rules import load_rules
from agent_lsp.messages import TaskStatus, ToolCall, ToolStatus
from agent_lsp.project.workspace import Workspace
from agent_lsp.task import Task, TaskKind
from agent_lsp.tools import RememberTool, UpdateTaskTool
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.test_agent import make_session

KEY = "CANARY-SSH-KEY-4242"
DOTENV = "CANARY-DOTENV-1717"
TASK = Task(kind=TaskKind.TASK, instruction="make greet() say hello", path="app.py")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files outside the workspace: a private key and a folder to write into."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n")
    (home / "elsewhere").mkdir()
    (home / "elsewhere" / "keep.txt").write_text("keep\n")
    return home


def snapshot(top: Path) -> dict[str, bytes]:
    """Every file under `top` (links not followed) and its bytes."""
    out: dict[str, bytes] = {}
    for dirpath, _dirs, files in os.walk(top):
        for name in files:
            path = Path(dirpath) / name
            out[path.relative_to(top).as_posix()] = path.read_bytes()
    return out


def sent(server: FakeOpenAIServer) -> str:
    """Everything the model endpoint received."""
    return json.dumps(server.requests)


def link(path: Path, target: Path | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


async def test_linked_prompt_files_never_reach_the_model(
    plain: Path, outside: Path, fake_openai: FakeOpenAIServer
) -> None:
    key = outside / ".ssh" / "id_rsa"
    (plain / ".env").write_text(f"API_KEY={DOTENV}\n")
    link(plain / "AGENTS.md", key)
    link(plain / "CLAUDE.md", ".env")
    link(plain / ".cursorrules", os.path.relpath(key, plain))
    link(plain / ".github" / "copilot-instructions.md", key)
    state = plain / ".agent-lsp" / "state" / "project"
    link(state / "facts.md", key)
    link(state / "env.md", plain / ".env")
    memory = plain / ".agent-lsp" / "memory"
    link(memory / "notes.md", key)
    experience = outside / "2024-01-01--greet-hello.md"
    experience.write_text(f"# greet hello\n\n- tags: greet, hello\n\n## Goal\n{KEY} greet\n")
    link(memory / "2024-01-01--greet-hello.md", experience)
    before = snapshot(outside)
    fake_openai.script(Reply("Done."))
    channel = RecordingChannel()
    session = make_session(plain, fake_openai.base_url)
    outcome = await session.run_task(TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED
    assert fake_openai.requests
    text = sent(fake_openai)
    assert KEY not in text and DOTENV not in text
    system = str(fake_openai.requests[0]["messages"][0]["content"])
    for rel in ("AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md"):
        assert f"WARN {rel}: not loaded" in system, (rel, system)
    assert "WARN .agent-lsp/state/project/facts.md: not loaded" in system
    assert "WARN .agent-lsp/memory/notes.md: not loaded" in system
    warned = " ".join(e.message for e in channel.events)
    assert "CLAUDE.md: not loaded" in warned and KEY not in warned
    assert snapshot(outside) == before


async def test_links_inside_the_workspace_still_load(
    plain: Path, fake_openai: FakeOpenAIServer
) -> None:
    """CLAUDE.md -> AGENTS.md is a common, harmless link: it stays inside and is no secret."""
    (plain / "docs").mkdir()
    (plain / "docs" / "agents.md").write_text("Use tabs for indentation.\n")
    link(plain / "AGENTS.md", "docs/agents.md")
    link(plain / "CLAUDE.md", "AGENTS.md")
    warnings: list[str] = []
    rules = load_rules(plain, "app.py", warnings)
    assert rules == [
        ("AGENTS.md", "Use tabs for indentation."),
        ("CLAUDE.md", "Use tabs for indentation."),
    ]
    assert warnings == []


def test_secret_rules_files_are_skipped_with_a_warning(plain: Path) -> None:
    (plain / ".github").mkdir()
    (plain / ".github" / "copilot-instructions.md").write_text("fine\n")
    (plain / ".env").write_text(f"{DOTENV}\n")
    link(plain / "AGENTS.md", ".env")
    warnings: list[str] = []
    assert load_rules(plain, None, warnings) == [(".github/copilot-instructions.md", "fine")]
    assert len(warnings) == 1 and warnings[0].startswith("AGENTS.md: not loaded (")
    assert "secret" in warnings[0] and DOTENV not in warnings[0]


@pytest.mark.parametrize("linked", [".agent-lsp", ".agent-lsp/state", ".agent-lsp/memory"])
async def test_a_linked_agent_folder_is_never_written_through(
    plain: Path, outside: Path, fake_openai: FakeOpenAIServer, linked: str
) -> None:
    target = outside / "elsewhere"
    (target / "state" / "project").mkdir(parents=True)
    (target / "state" / "project" / "facts.md").write_text(f"{KEY}\n")
    (target / "project").mkdir()
    (target / "project" / "facts.md").write_text(f"{KEY}\n")
    (target / "notes.md").write_text(f"- {KEY}\n")
    if linked != ".agent-lsp":
        (plain / ".agent-lsp").mkdir()
    link(plain / linked, target)
    before = snapshot(outside)
    fake_openai.script(Reply("Done."))
    session = make_session(plain, fake_openai.base_url)
    with pytest.raises(AgentLspError, match="link"):
        await session.run_task(TASK, RecordingChannel())
    await session.aclose()
    assert KEY not in sent(fake_openai)
    memory = ProjectMemory(plain)
    if linked == ".agent-lsp/state":  # the memory folder is a real one: remembering works
        saved = await memory.remember("the user's remember command", None)
        assert saved.path is not None and (plain / saved.path).is_file()
    else:
        with pytest.raises(AgentLspError, match=r"not remembered: .* is a link"):
            await memory.remember("the user's remember command", None)
    assert snapshot(outside) == before


@pytest.mark.parametrize(
    ("linked", "tool", "args"),
    [
        (".agent-lsp/memory", "remember", {"note": "a fact"}),
        (".agent-lsp", "remember", {"note": "a fact"}),
        (".agent-lsp/memory/notes.md", "remember", {"note": "a fact"}),
        (".agent-lsp/state", "update_task", {"section": "goal", "content": "x"}),
        (".agent-lsp/state/task", "update_task", {"section": "goal", "content": "x"}),
        (
            ".agent-lsp/state/task/current-task.md",
            "update_task",
            {"section": "goal", "content": "x"},
        ),
    ],
)
async def test_remember_and_update_task_refuse_links(
    plain: Path, outside: Path, linked: str, tool: str, args: dict[str, object]
) -> None:
    target = outside / "elsewhere" / "keep.txt" if linked.endswith(".md") else outside / "elsewhere"
    (plain / linked).parent.mkdir(parents=True, exist_ok=True)
    link(plain / linked, target)
    before = snapshot(outside)
    ws = Workspace(plain, RecordingChannel())
    box = ToolBox([RememberTool(ws), UpdateTaskTool(ws)], 30, 60)
    result = await box.call(ToolCall(id="1", name=tool, arguments=json.dumps(args)))
    assert result.status is ToolStatus.ERROR, result
    assert result.error is not None and "link" in result.error
    assert snapshot(outside) == before
    assert (plain / linked).is_symlink()  # not replaced either: refused, said so


async def test_logs_checkpoints_and_outputs_refuse_linked_folders(
    plain: Path, outside: Path
) -> None:
    target = outside / "elsewhere"
    layout = Layout(plain)
    for name in ("logs", "checkpoints"):
        link(layout.base / name, target)
    before = snapshot(outside)
    log = SessionLog(layout.logs, "s1")
    log.record("session", "session", note="x")
    store = CheckpointStore(layout.checkpoints)
    with pytest.raises(OSError, match="link"):
        store.save(Checkpoint(task_id="t1", task=TASK))
    with pytest.raises(OSError, match="link"):
        store.lock("t1")
    keeper = OutputKeeper(plain, head=1, tail=1)
    kept = keeper.keep("run_command", "\n".join(f"line {i}" for i in range(10)))
    assert "could not be saved" in kept
    assert snapshot(outside) == before
