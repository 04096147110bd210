"""git as the agent's tools run it sees the workspace and nothing else, sandbox on or off: a
repository cannot point git's work tree at the user's home (`core.worktree`) or its git folder
at another repository beside it (a `.git` file `gitdir: ../other/.git`) and so read files
outside the workspace into the model's context. A linked worktree and a submodule, which point
outside for good reasons, keep working. With the real git, through the session's git tools."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_lsp.config.schema import Settings
from agent_lsp.project.workspace import Workspace
from agent_lsp.session import Session
from agent_lsp.tools.git import GitDiffArgs, GitDiffTool, GitStatusArgs, GitStatusTool
from tests.fakes.channel import RecordingChannel
from tests.safety.test_sandbox import require_sandbox

ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        input=stdin,
        env={"PATH": "/usr/bin:/bin", **ENV},
    )
    return done.stdout.strip()


def session_for(ws: Path, sandboxed: bool) -> Session:
    return Session(ws, Settings.model_validate({"sandbox": {"enabled": sandboxed}}))


async def seen_by_tools(ws: Path, sandboxed: bool) -> str:
    session = session_for(ws, sandboxed)
    try:
        workspace = Workspace(ws, RecordingChannel())
        status = await GitStatusTool(workspace, session.git).run(GitStatusArgs())
        diff = await GitDiffTool(workspace, session.git).run(GitDiffArgs(path=None))
        return status.output + "\n" + diff.output
    finally:
        session.close()


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A fake home with a secret, and a workspace beside it."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh/id_rsa").write_text("-----BEGIN KEY----- home-canary-key\n")
    (home / "notes.txt").write_text("home-canary-notes\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    return home, ws


def ship_index_over(ws: Path, names: list[str]) -> None:
    """A repository whose last commit tracks `names` with stand-in content: a diff against the
    real files would print them."""
    git(ws, "init", "-q")
    for name in names:
        blob = git(ws, "hash-object", "-w", "--stdin", stdin="stand-in\n")
        git(ws, "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}")
    git(ws, "commit", "-qm", "shipped")


@pytest.mark.parametrize("sandboxed", [False, True])
async def test_a_work_tree_set_to_the_home_shows_nothing_of_it(
    layout: tuple[Path, Path], sandboxed: bool
) -> None:
    home, ws = layout
    if sandboxed:
        require_sandbox(home, ws.parent)
    ship_index_over(ws, ["notes.txt", ".ssh/id_rsa"])
    git(ws, "config", "core.worktree", str(home))
    (ws / "app.py").write_text("print(1)\n")
    seen = await seen_by_tools(ws, sandboxed)
    assert "home-canary" not in seen, seen
    # what git reports is the workspace: its own file, the shipped names missing from it
    assert "app.py" in seen, seen


@pytest.mark.parametrize("sandboxed", [False, True])
async def test_a_git_file_pointing_at_another_repository_is_not_followed(
    tmp_path: Path, sandboxed: bool
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "private.txt").write_text("other-canary\n")
    git(other, "init", "-q")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "mine")
    ws = tmp_path / "ws"
    ws.mkdir()
    if sandboxed:
        require_sandbox(tmp_path / "nohome", tmp_path)
    (ws / ".git").write_text("gitdir: ../other/.git\n")
    (ws / "app.py").write_text("print(1)\n")
    seen = await seen_by_tools(ws, sandboxed)
    assert "other-canary" not in seen and "private.txt" not in seen, seen


async def test_a_linked_worktree_and_a_submodule_still_work_without_a_sandbox(
    tmp_path: Path,
) -> None:
    main = tmp_path / "main"
    main.mkdir()
    (main / "a.py").write_text("x = 1\n")
    git(main, "init", "-q")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "one")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", str(linked))
    (linked / "a.py").write_text("x = 2\n")
    seen = await seen_by_tools(linked, sandboxed=False)
    assert "-x = 1" in seen and "+x = 2" in seen, seen

    parent = tmp_path / "parent"
    parent.mkdir()
    git(parent, "init", "-q")
    git(parent, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(main), "sub")
    git(parent, "commit", "-qm", "sub")
    sub = parent / "sub"
    assert (sub / ".git").is_file()
    (sub / "a.py").write_text("x = 3\n")
    seen = await seen_by_tools(sub, sandboxed=False)
    assert "-x = 1" in seen and "+x = 3" in seen, seen


def victim_repository(tmp_path: Path) -> tuple[Path, str]:
    """A repository beside the workspace, with a private file committed; its HEAD commit."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "private.txt").write_text("OTHER-REPO-CANARY secret content\n")
    git(victim, "init", "-q", "-b", "main")
    git(victim, "add", "-A")
    git(victim, "commit", "-qm", "victim-commit-msg")
    return victim, git(victim, "rev-parse", "HEAD")


@pytest.mark.parametrize("how", ["commondir", "alternates", "objects-link"])
@pytest.mark.parametrize("sandboxed", [False, True])
async def test_a_git_folder_that_borrows_another_repository_is_not_read(
    tmp_path: Path, how: str, sandboxed: bool
) -> None:
    victim, head = victim_repository(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    if sandboxed:
        require_sandbox(tmp_path / "nohome", tmp_path)
    (ws / "app.py").write_text("print(1)\n")
    git(ws, "init", "-q", "-b", "main")
    dot = ws / ".git"
    if how == "commondir":
        (dot / "commondir").write_text(str(victim / ".git") + "\n")
    elif how == "alternates":
        (dot / "objects/info/alternates").write_text(str(victim / ".git/objects") + "\n")
        (dot / "refs/heads/main").write_text(head + "\n")
        git(ws, "read-tree", "main")
    else:
        import shutil

        shutil.rmtree(dot / "objects")
        (dot / "objects").symlink_to(victim / ".git/objects")
        (dot / "refs/heads/main").write_text(head + "\n")
    seen = await seen_by_tools(ws, sandboxed)
    for leaked in ["OTHER-REPO-CANARY", "victim-commit-msg", "private.txt"]:
        assert leaked not in seen, seen


async def test_a_filter_in_the_repository_config_prints_no_secret_into_a_diff(
    tmp_path: Path,
) -> None:
    """In the sandbox git sees the secret files (not their empty stand-ins); a filter the
    repository's config names (`clean = cat .env; cat`) would print one into git_diff."""
    ws = tmp_path / "ws"
    ws.mkdir()
    require_sandbox(tmp_path / "nohome", tmp_path)
    (ws / "app.py").write_text("print(1)\n")
    (ws / ".env").write_text("API_KEY=sk-WORKSPACE-SECRET-CANARY\n")
    git(ws, "init", "-q")
    git(ws, "add", "app.py")
    git(ws, "commit", "-qm", "one")
    git(ws, "config", "filter.x.clean", "cat .env; cat")
    (ws / ".git/info/attributes").write_text("app.py filter=x\n")
    (ws / "app.py").write_text("print(2)\n")
    seen = await seen_by_tools(ws, sandboxed=True)
    assert "SECRET-CANARY" not in seen, seen
    assert "names programs git would run (filter.x.clean)" in seen, seen


async def test_a_program_added_to_the_config_mid_session_stops_git_at_once(tmp_path: Path) -> None:
    """The config check is remembered while the config is unchanged: a change (a command
    writing `core.fsmonitor` without a sandbox) is seen at the next git call."""
    from agent_lsp.project.git import Git
    from agent_lsp.safety.confined import ConfinedShell
    from agent_lsp.safety.sandbox import Confinement, Sandbox

    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    tool = Git(ws, ConfinedShell(Sandbox(enabled=False), Confinement(visible=(ws,))))
    first = await tool.run("status", "--porcelain")
    assert first.exit_code == 0 and "?? a.txt" in first.output
    canary = tmp_path / "canary"
    git(ws, "config", "core.fsmonitor", f"touch {canary}; false")
    refused = await tool.run("status", "--porcelain")
    assert refused.exit_code == 126 and "core.fsmonitor" in refused.output
    assert not canary.exists()
