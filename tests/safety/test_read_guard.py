"""Deny path rules of a real `.agent-lsp/policy.toml` hide files from every read the agent does:
listings, searches, `read_file`, and the files the harness loads into the prompt itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_lsp.config.schema import Settings
from agent_lsp.fileio import UnsafePathError, atomic_write, open_append
from agent_lsp.loop.prompt import build_messages
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.messages import TaskStatus, ToolCall, ToolResult, ToolStatus
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.engine import SafetyPolicy
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.reads import ReadGuard
from agent_lsp.safety.setup import build_policy
from agent_lsp.task import DiagnosticInfo, Task, TaskKind
from agent_lsp.tools import ListFilesTool, ReadFileTool, SearchTextTool
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.test_agent import make_session

CANARY = "CANARY-CUSTOMER-9090"
POLICY = """
[[deny]]
path = "customer-data/**"

[[deny]]
path = "CLAUDE.md"

[[deny]]
path = ".agent-lsp/memory/**"
reason = "notes hold customer names"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    files = {
        "app.py": "def greet(name):\n    return 'hi ' + name\n",
        "customer-data/clients.csv": f"name,card\nAda,{CANARY}\n",
        "customer-data/deep/more.txt": f"{CANARY}\n",
        "CLAUDE.md": f"Customer: {CANARY}\n",
        "AGENTS.md": "Keep greet() short.\n",
        ".agent-lsp/policy.toml": POLICY,
        ".agent-lsp/memory/notes.md": f"# Project notes\n\n- 2024-01-01 00:00: {CANARY}\n",
        ".agent-lsp/state/project/facts.md": "greet() is user-facing.\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "public").mkdir()
    (root / "public" / "data").symlink_to(root / "customer-data")  # a link into denied data
    return root


def engine(root: Path, tmp_path: Path) -> SafetyPolicy:
    user = tmp_path / "user" / "config.toml"  # no user rules, an untrusted workspace
    return build_policy(root, Settings(), user_config=user, home=tmp_path / "home").engine


def tools(root: Path, tmp_path: Path) -> ToolBox:
    channel = RecordingChannel()
    ws = Workspace(root, channel, CommandPolicy(channel, set(), engine=engine(root, tmp_path)))
    return ToolBox([ListFilesTool(ws), SearchTextTool(ws), ReadFileTool(ws)], 30, 60)


async def call(box: ToolBox, name: str, **args: object) -> ToolResult:
    return await box.call(ToolCall(id="1", name=name, arguments=json.dumps(args)))


async def test_deny_path_rules_hide_files_from_listing_and_search(
    project: Path, tmp_path: Path
) -> None:
    box = tools(project, tmp_path)
    listed = (await call(box, "list_files")).output.splitlines()
    assert "app.py" in listed and "AGENTS.md" in listed
    assert not any(p.startswith(("customer-data", "public/data")) for p in listed), listed
    assert "CLAUDE.md" not in listed
    found = await call(box, "search_text", pattern=CANARY)
    assert found.output == f"no matches for {CANARY!r}", found.output
    for path in ("customer-data", "customer-data/clients.csv", "public/data", "CLAUDE.md"):
        direct = await call(box, "search_text", pattern="Ada", path=path)
        assert direct.status is ToolStatus.ERROR and CANARY not in direct.output, (path, direct)
        assert direct.error is not None and "denied by" in direct.error
        listing = await call(box, "list_files", path=path)
        assert listing.status is ToolStatus.ERROR and CANARY not in listing.output
    read = await call(box, "read_file", path="customer-data/clients.csv")
    assert read.error is not None and "denied by .agent-lsp/policy.toml deny #1" in read.error
    assert "greet" in (await call(box, "search_text", pattern="greet")).output


async def test_deny_path_rules_keep_files_out_of_the_prompt(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.script(Reply("Done."))
    session = make_session(project, fake_openai.base_url)
    task = Task(kind=TaskKind.TASK, instruction="make greet() say hello", path="app.py")
    outcome = await session.run_task(task, RecordingChannel())
    await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED
    assert CANARY not in json.dumps(fake_openai.requests)
    system = str(fake_openai.requests[0]["messages"][0]["content"])
    assert "Keep greet() short." in system and "greet() is user-facing." in system
    assert "WARN CLAUDE.md: not loaded (.agent-lsp/policy.toml deny #2: deny path 'CLAUDE.md')" in (
        system
    )


def test_the_read_guard_says_why(project: Path, tmp_path: Path) -> None:
    (project / ".env").write_text("K=1\n")
    (project / "keylink").symlink_to(tmp_path / "home")
    guard = ReadGuard(project, engine(project, tmp_path))
    assert guard.refusal(project / "AGENTS.md") is None
    assert guard.refusal(project / "public/data/clients.csv") == (
        ".agent-lsp/policy.toml deny #1: deny path 'customer-data/**'"
    )
    assert "secret" in (guard.refusal(project / ".env") or "")
    assert guard.refusal(project / "keylink/x") == "a link leading out of the workspace"
    assert guard.refusal(tmp_path / "x") == "outside the workspace"
    plain = ReadGuard(project)  # no policy: links and secrets still refused
    assert plain.refusal(project / "customer-data/clients.csv") is None
    assert "secret" in (plain.refusal(project / ".env") or "")


def test_the_task_message_shows_no_denied_or_secret_excerpt(project: Path, tmp_path: Path) -> None:
    (project / ".env").write_text(f"KEY={CANARY}\n")
    (project / "customer-data" / "load.py").write_text(f"ROWS = ['{CANARY}']\n")
    channel = RecordingChannel(
        {project / "customer-data/clients.csv": f"{CANARY}\n", project / "app.py": "x = 1\n"}
    )
    ws = Workspace(
        project, channel, CommandPolicy(channel, set(), engine=engine(project, tmp_path))
    )
    for path in ("customer-data/load.py", ".env", "public/data/load.py"):
        diag = DiagnosticInfo(message="undefined name", line=0)
        task = Task(kind=TaskKind.FIX, instruction="", path=path, diagnostic=diag)
        text = json.dumps([m.model_dump() for m in build_messages(task, ws, "python")])
        assert CANARY not in text, path
        assert "customer-data/clients.csv" not in text and "app.py" in text
    shown = build_messages(
        Task(
            kind=TaskKind.FIX,
            instruction="",
            path="app.py",
            diagnostic=DiagnosticInfo(message="m", line=0),
        ),
        ws,
        "python",
    )
    assert "1| x = 1" in str(shown[1].content)


@pytest.mark.parametrize(
    "linked", [".agent-lsp", ".agent-lsp/proposals", ".agent-lsp/proposals/p1.diff"]
)
def test_writes_under_agent_lsp_never_follow_a_link(tmp_path: Path, linked: str) -> None:
    """Every writer of `.agent-lsp/` (proposals, outputs, logs...) goes through atomic_write
    or open_append, which refuse a link anywhere below the folder holding `.agent-lsp`."""
    root, away = tmp_path / "ws", tmp_path / "away"
    (root / ".agent-lsp" / "proposals").mkdir(parents=True)
    away.mkdir()
    (away / "p1.diff").write_text("theirs\n")
    target = away / "p1.diff" if linked.endswith(".diff") else away
    if linked != ".agent-lsp/proposals/p1.diff":
        shutil.rmtree(root / linked)
    (root / linked).symlink_to(target)
    diff = root / ".agent-lsp" / "proposals" / "p1.diff"
    with pytest.raises(UnsafePathError, match="is a link"):
        atomic_write(diff, "ours\n")
    with pytest.raises(UnsafePathError, match="is a link"):
        open_append(diff)
    assert sorted(p.name for p in away.iterdir()) == ["p1.diff"]
    assert (away / "p1.diff").read_text() == "theirs\n"


def test_plain_writes_keep_working(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / "src" / "app.py").write_text("old\n")
    (real / "src" / "app.py").chmod(0o640)
    (tmp_path / "ws").symlink_to(real)  # the workspace opened through a link: fine
    atomic_write(tmp_path / "ws" / "src" / "app.py", "new\n")
    atomic_write(tmp_path / "ws" / ".agent-lsp" / "state" / "task.json", "{}\n")
    assert (real / "src" / "app.py").read_text() == "new\n"
    assert (real / "src" / "app.py").stat().st_mode & 0o777 == 0o640
    assert (real / ".agent-lsp" / "state" / "task.json").read_text() == "{}\n"
    with open_append(real / ".agent-lsp" / "logs" / "s.jsonl") as fh:
        fh.write("{}\n")
    assert (real / ".agent-lsp" / "logs" / "s.jsonl").read_text() == "{}\n"
