"""`agent-lsp test` and the dry run of the tests in `agent-lsp improve`'s self-check run the
project's tests in a copy (docs/security.md: a test run may write only its shadow copy): the
workspace — every file's bytes, every folder, `git status --porcelain --ignored` — is as it was,
whatever the tests write next to themselves."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import BUG, FIX
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_cli import agent_lsp

# What test suites leave behind: a file next to the tests, a cache folder (hypothesis' own).
WRITES = """\
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_writes_into_the_project():
    (ROOT / "written-by-a-test.txt").write_text("x")
    (ROOT / ".hypothesis" / "examples").mkdir(parents=True, exist_ok=True)
"""
GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@example.invalid")


def git_project(project: Path) -> Path:
    (project / "tests" / "test_writes.py").write_text(WRITES)
    subprocess.run([*GIT, "init", "-q"], cwd=project, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-qm", "start"], cwd=project, check=True)
    return project


def workspace_state(root: Path) -> tuple[dict[str, bytes | str], str]:
    """Every entry outside .git (a folder as "folder", a link as its target, a file as its
    bytes) and what git says of the work tree, ignored files included."""
    entries: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_symlink():
            entries[rel] = f"link to {path.readlink()}"
        elif path.is_dir():
            entries[rel] = "folder"
        else:
            entries[rel] = path.read_bytes()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return entries, status


def test_agent_lsp_test_leaves_the_workspace_as_it_was(
    project: Path, server_env: dict[str, str]
) -> None:
    root = git_project(project)
    before = workspace_state(root)

    done = agent_lsp("test", "--root", str(root), env=server_env)

    assert done.returncode == 1, done.stdout + done.stderr  # the sample's failing test
    assert done.stdout.startswith("pytest: 2 passed, 1 failed, 0 errors"), done.stdout
    assert workspace_state(root) == before


def test_the_improve_dry_run_of_the_tests_leaves_the_workspace_as_it_was(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """A tests.args change is checked by a run of the suite with it; what the improvement
    writes is its change and its log (.agent-lsp/config.toml, .agent-lsp/improvements/), and
    the task its state (.agent-lsp/state/, .agent-lsp/logs/); nothing of the dry run."""
    calc = project / "calc.py"
    calc.write_text(calc.read_text().replace(BUG, FIX))  # a passing suite
    root = git_project(project)
    assert agent_lsp("trust", "--root", str(root), env=server_env).returncode == 0
    before = workspace_state(root)
    args = {"key": "tests.args", "value": ["-p", "no:randomly"]}
    fake_openai.script(
        Reply(tool_calls=[ToolCall("propose_improvement", {"summary": "s", "config": [args]})]),
        Reply("Proposed."),
    )
    fake_openai.default_reply = Reply("done.")

    done = agent_lsp("improve", "pass -p no:randomly", "--yes", "--root", str(root), env=server_env)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked: settings reload and validate; " in done.stdout
    assert "dry run of the tests (pytest): 3 passed, 0 failed" in done.stdout
    entries, status = workspace_state(root)
    ours = {rel for rel in entries if rel == ".agent-lsp" or rel.startswith(".agent-lsp/")}
    assert {k: v for k, v in entries.items() if k not in ours} == before[0]
    others = [line for line in status.splitlines() if not line[3:].startswith(".agent-lsp/")]
    assert others == before[1].splitlines()
    assert ".agent-lsp/config.toml" in ours
    assert any(rel.startswith(".agent-lsp/improvements/") for rel in ours)
