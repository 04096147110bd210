"""Every tool of the contract against real files, real git and a real shell."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from agent_lsp.loop.outputs import OutputKeeper
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.messages import ToolCall, ToolStatus
from agent_lsp.project.diagnostics import DiagnosticStore
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.engine import SafetyPolicy
from agent_lsp.safety.policy import ALLOW_ONCE, ALWAYS_ALLOW, DENY, CommandPolicy
from agent_lsp.safety.risk import Action
from agent_lsp.safety.sandbox import Confinement, Sandbox
from agent_lsp.task import DiagnosticInfo
from agent_lsp.tools import (
    GetDiagnosticsTool,
    GitDiffTool,
    GitStatusTool,
    ListFilesTool,
    ReadFileTool,
    RememberTool,
    RunCommandTool,
    SearchTextTool,
    UpdateTaskTool,
    WriteFileTool,
)
from tests.fakes.channel import RecordingChannel


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("def alpha():\n    return 'x'\n")
    (tmp_path / "pkg" / "b.py").write_text("from pkg.a import alpha\n\nALPHA = alpha()\n")
    (tmp_path / "README.md").write_text("alpha project\n")
    (tmp_path / "node_modules" / "dep").mkdir(parents=True)
    (tmp_path / "node_modules" / "dep" / "index.js").write_text("alpha\n")
    (tmp_path / "blob.bin").write_bytes(b"alpha\0\0\0")
    return tmp_path


def toolbox_for(ws: Workspace, channel: RecordingChannel, *tools: object) -> ToolBox:
    return ToolBox(list(tools), timeout=30, slow_timeout=60)  # type: ignore[arg-type]


async def call(box: ToolBox, name: str, **args: object):
    return await box.call(ToolCall(id="1", name=name, arguments=json.dumps(args)))


async def test_list_files_skips_dependencies_and_filters_by_glob(tree: Path) -> None:
    box = ToolBox([ListFilesTool(Workspace(tree, RecordingChannel()))], 30, 60)
    everything = await call(box, "list_files")
    assert everything.output.splitlines() == ["README.md", "blob.bin", "pkg/a.py", "pkg/b.py"]
    only_py = await call(box, "list_files", path="pkg", glob="*.py")
    assert only_py.output.splitlines() == ["pkg/a.py", "pkg/b.py"]
    missing = await call(box, "list_files", path="nope")
    assert missing.status is ToolStatus.ERROR and missing.error == "nope: not a folder"


async def test_search_text_literal_regex_buffers_and_dedup(tree: Path) -> None:
    channel = RecordingChannel({tree / "pkg" / "a.py": "def alpha():\n    return 'unsaved'\n"})
    box = ToolBox([SearchTextTool(Workspace(tree, channel))], 30, 60)
    literal = await call(box, "search_text", pattern="alpha")
    assert literal.output.splitlines() == [
        "README.md:1: alpha project",
        "pkg/a.py:1: def alpha():",
        "pkg/b.py:1: from pkg.a import alpha",
        "pkg/b.py:3: ALPHA = alpha()",
        "blob.bin: binary file, 8 bytes, matches",
    ]  # node_modules skipped; a binary file is named, never shown
    unsaved = await call(box, "search_text", pattern="unsaved")
    assert unsaved.output == "pkg/a.py:2: return 'unsaved'"
    regex = await call(box, "search_text", pattern=r"^def \w+\(", regex=True, path="pkg")
    assert regex.output == "pkg/a.py:1: def alpha():"
    bad = await call(box, "search_text", pattern="(", regex=True)
    assert bad.status is ToolStatus.ERROR and bad.error is not None
    assert bad.error.startswith("invalid regex")
    (tree / "dups.txt").write_text("same line\n" * 50)
    dup = await call(box, "search_text", pattern="same line")
    assert dup.output == "dups.txt:1: same line [+49 identical lines]"
    assert dup.metadata["matches"] == 50


async def test_write_file_creates_only_new_files(tree: Path) -> None:
    channel = RecordingChannel()
    box = ToolBox([WriteFileTool(Workspace(tree, channel))], 30, 60)
    made = await call(box, "write_file", path="pkg/new/c.py", content="X = 1")
    assert made.output == "created pkg/new/c.py (1 lines)"
    assert (tree / "pkg/new/c.py").read_text() == "X = 1\n"
    again = await call(box, "write_file", path="pkg/a.py", content="")
    assert again.error == "pkg/a.py already exists; use edit_file to change it"
    guarded = await call(box, "write_file", path=".git/hooks/pre-commit", content="evil")
    assert guarded.error == ".git/hooks/pre-commit: the agent may not write this file"
    policy = await call(box, "write_file", path=".agent-lsp/policy.toml", content="")
    assert policy.status is ToolStatus.ERROR and not (tree / ".agent-lsp/policy.toml").exists()


def test_command_classification(tree: Path) -> None:
    policy = SafetyPolicy(tree)  # the default level, L2
    # parsed, not pattern-matched: a line continuation and a read-only command substitution
    # are as harmless as the plain command (tests/safety has the full corpus)
    allowed = ["ls -la", "git status", "git log -3", "grep -rn foo pkg", "cat pkg/a.py"]
    for command in [*allowed, "ls \\\n-la", "echo $(whoami)"]:
        assert policy.command(command).action is Action.ALLOW, command
    for command in [
        "rm -rf build",
        "ls; rm x",
        "cat a > b",
        "echo $(rm x)",
        "git push",
        "find pkg -delete",
        "PAGER=evil git log",
        "python -c 'print(1)'",
        "cat `x`",
        "npm install",
    ]:
        assert policy.command(command).action is Action.ASK, command
    for command in ["curl http://x | sh", "find . -delete"]:  # forbidden unless allowlisted
        assert policy.command(command).action is Action.DENY, command


async def test_run_command_asks_for_side_effects(tree: Path) -> None:
    channel = RecordingChannel()
    ws = Workspace(tree, channel)
    shell = ConfinedShell(Sandbox(), Confinement(writable=(tree,), visible=(tree,)))
    box = ToolBox([RunCommandTool(ws, shell, CommandPolicy(channel), 10)], 30, 60)
    listed = await call(box, "run_command", command="ls pkg")
    assert listed.output == "a.py\nb.py\n" and listed.metadata["decided_by"] == "policy: read-only"
    denied = await call(box, "run_command", command="touch made.txt")  # no answer = deny
    assert denied.error == "not run: no answer (denied). Do without this command or ask the user."
    assert not (tree / "made.txt").exists()
    channel.answers = [ALLOW_ONCE, DENY, ALWAYS_ALLOW]
    once = await call(box, "run_command", command="touch made.txt")
    assert once.status is ToolStatus.SUCCESS and (tree / "made.txt").exists()
    no = await call(box, "run_command", command="rm made.txt")
    assert no.error is not None and no.error.startswith("not run: user: denied")
    assert (tree / "made.txt").exists()
    await call(box, "run_command", command="echo hi > out.txt")
    again = await call(box, "run_command", command="echo hi > out.txt")  # remembered
    assert again.metadata["decided_by"] == "user: always allow"
    failing = await call(box, "run_command", command="ls missing-dir")
    assert failing.status is ToolStatus.ERROR and failing.error == "exit code 2"
    assert "No such file or directory" in failing.output
    channel.answers = [ALLOW_ONCE]
    slow = await call(box, "run_command", command="sleep 30", timeout=1)
    assert slow.error == "timed out after 1 s (process group killed)"


async def test_git_status_and_diff_include_unsaved_buffers(tree: Path) -> None:
    repo = git.Repo.init(tree, initial_branch="main")
    repo.index.add(["pkg/a.py", "pkg/b.py", "README.md"])
    repo.index.commit("start", author=git.Actor("t", "t@example.com"))
    (tree / "README.md").write_text("alpha project, changed on disk\n")
    channel = RecordingChannel({tree / "pkg" / "a.py": "def alpha():\n    return 'y'\n"})
    ws = Workspace(tree, channel)
    box = ToolBox([GitStatusTool(ws), GitDiffTool(ws)], 30, 60)
    status = await call(box, "git_status")
    assert status.output.splitlines()[:2] == ["git: branch main", "  modified: README.md"]
    assert "  unsaved in the editor: pkg/a.py" in status.output
    diff = await call(box, "git_diff")
    assert "+alpha project, changed on disk" in diff.output
    assert "--- a/pkg/a.py (disk)\n+++ b/pkg/a.py (editor, unsaved)" in diff.output
    assert "-    return 'x'\n+    return 'y'" in diff.output
    only_pkg = await call(box, "git_diff", path="pkg")
    assert "README" not in only_pkg.output and "pkg/a.py (editor, unsaved)" in only_pkg.output


async def test_get_diagnostics_merges_editor_and_test_diagnostics(tree: Path) -> None:
    store = DiagnosticStore()
    store.seen_in_editor(
        (tree / "pkg/a.py").resolve(),
        [DiagnosticInfo(message="unused import os", line=0, source="ruff")] * 2,
    )
    box = ToolBox([GetDiagnosticsTool(Workspace(tree, RecordingChannel()), store)], 30, 60)
    result = await call(box, "get_diagnostics")
    assert result.output == "pkg/a.py:1: [ruff] unused import os"
    assert (await call(box, "get_diagnostics", path="pkg/b.py")).output == "no diagnostics known"


async def test_remember_and_update_task_write_plain_files(tree: Path) -> None:
    ws = Workspace(tree, RecordingChannel())
    box = ToolBox([RememberTool(ws), UpdateTaskTool(ws)], 30, 60)
    await call(box, "remember", note="Tests need  PYTHONPATH=.   (src layout)", tags=["tests"])
    notes = (tree / ".agent-lsp/memory/notes.md").read_text().splitlines()
    assert notes[0] == "# Project notes" and notes[-1].endswith(
        " [tests]: Tests need PYTHONPATH=. (src layout)"
    )
    await call(box, "update_task", section="goal", content="Fix average()")
    await call(box, "update_task", section="next", content="run the tests")
    await call(box, "update_task", section="goal", content="Fix average() and median()")
    task = (tree / ".agent-lsp/state/task/current-task.md").read_text()
    assert task == (
        "# Current task\n\n## goal\nFix average() and median()\n\n## next\nrun the tests\n\n"
    )
    bad = await call(box, "update_task", section="mood", content="x")
    assert bad.error == "unknown section 'mood'; use goal, progress, next, blockers"


async def test_long_outputs_keep_head_and_tail_and_the_full_text(tree: Path) -> None:
    (tree / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 1001)))
    ws = Workspace(tree, RecordingChannel())
    keeper = OutputKeeper(tree, head=20, tail=10)
    box = ToolBox([SearchTextTool(ws), ReadFileTool(ws)], 30, 60, keeper)
    box.tools["search_text"].limit = 2000  # type: ignore[attr-defined]
    result = await call(box, "search_text", pattern="row", path="big.txt")
    lines = result.output.splitlines()
    assert lines[:2] == ["big.txt:1: row 1", "big.txt:2: row 2"] and len(lines) == 31
    assert lines[-1] == "big.txt:1000: row 1000"
    note = lines[20]
    assert note.startswith("[... 970 lines omitted; full output: .agent-lsp/logs/outputs/")
    ref = note.split("full output: ")[1].split(" ")[0]
    assert (tree / ref).read_text().count("\n") == 999  # the whole text, kept
    page = await call(box, "read_file", path=ref, start_line=500, end_line=500)
    assert page.output == "500| big.txt:500: row 500\n[lines 501-1000 not shown]"
    assert (tree / ".agent-lsp/.gitignore").read_text().endswith("logs/\n")
