"""What the first request tells the model about the project beyond the task: the last five
commits, a `git diff --stat` line of what is uncommitted (secret files left out), and the
README's head (not for a small model, whose window is short) — the real session, real git,
the fake server."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agent_lsp.messages import TaskStatus
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.test_agent import make_session

TASK = Task(kind=TaskKind.TASK, instruction="tidy up")


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def history(project: Path) -> None:
    (project / "README.md").write_text("# calc\n\nA tiny calculator for the examples.\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "first: the calculator")
    for n in range(2, 8):
        (project / "notes.txt").write_text(f"{n}\n")
        git(project, "add", "-A")
        git(project, "commit", "-qm", f"change number {n}")
    calc = project / "calc.py"
    calc.write_text(calc.read_text().replace(BUG, FIX))  # uncommitted
    (project / ".env").write_text("TOKEN=x\n")
    git(project, "add", "-f", ".env")
    git(project, "commit", "-qm", "env")
    (project / ".env").write_text("TOKEN=secret-value\n")  # changed, and a secret


def system_prompt(fake: FakeOpenAIServer) -> str:
    return fake.requests[0]["messages"][0]["content"]


async def test_the_first_request_has_commits_uncommitted_changes_and_the_readme(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    history(project)
    fake_openai.script(Reply("Nothing to tidy."))
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(TASK, RecordingChannel())
    await session.aclose()
    assert outcome.status is not TaskStatus.ERROR, outcome.summary
    text = system_prompt(fake_openai)
    assert "  uncommitted: 1 files, +1/-1: calc.py +1/-1" in text, text
    assert ".env" not in text.split("uncommitted:")[1].splitlines()[0]
    commits = text.split("last commits: ")[1].splitlines()[0].split("; ")
    assert [c.split(" ", 1)[1] for c in commits] == [
        "env",
        "change number 7",
        "change number 6",
        "change number 5",
        "change number 4",
    ]
    assert "README (its head):\n# calc\n\nA tiny calculator for the examples." in text


async def test_a_small_model_is_not_given_the_readme(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    history(project)
    fake_openai.script(Reply("Nothing to tidy."))
    settings = {"baseUrl": fake_openai.base_url, "name": "fake-model", "apiKey": "k"}
    session = make_session(project, fake_openai.base_url, model={**settings, "profile": "small"})
    await session.run_task(TASK, RecordingChannel())
    await session.aclose()
    text = system_prompt(fake_openai)
    assert "uncommitted: 1 files" in text and "README (its head)" not in text
