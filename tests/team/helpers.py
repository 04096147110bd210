"""What the team tests share: a session on the fake model, one scripted team run (closed
whatever happens), the requests a role was sent, and the scripts of an edit and of the
two-module feature."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from agent_lsp.config.schema import Settings
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.seams import EditorChannel
from agent_lsp.session import Session
from agent_lsp.team import Orchestrator
from agent_lsp.team.orchestrator import TeamOptions, TeamOutcome
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.team.conftest import (
    AREA_BODY,
    COMMANDER,
    PERIMETER_BODY,
    PLANNER,
    REVIEWER,
    TASK,
    TWO_STEPS,
    edit_step,
    plan_reply,
    record_reply,
    review,
    step_marker,
)


def make_session(root: Path, base_url: str, timeout: float = 20) -> Session:
    settings = Settings.model_validate(
        {
            "model": {
                "baseUrl": base_url,
                "name": "fake-model",
                "apiKey": "test-key",
                "maxRetries": 0,
                "timeout": timeout,
            },
        }
    )
    return Session(root, settings, OpenAICompatModel(settings.model))


async def run_team(
    root: Path,
    fake: FakeOpenAIServer,
    instruction: str = TASK,
    *,
    options: TeamOptions | None = None,
    channel: EditorChannel | None = None,
    session: Session | None = None,
    resume: bool = False,
) -> TeamOutcome:
    """One team task on `root` (resumed with `resume`), its session closed whatever happens;
    `options` None: the project's settings decide."""
    session = session if session is not None else make_session(root, fake.base_url)
    team = Orchestrator(session, channel if channel is not None else RecordingChannel(), options)
    try:
        return await (team.resume() if resume else team.run(instruction))
    finally:
        await session.aclose()


def first_user(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def requests_of(fake: FakeOpenAIServer, marker: str) -> list[dict[str, Any]]:
    return [r for r in fake.requests if marker in first_user(r)]


def count(fake: FakeOpenAIServer, marker: str) -> int:
    return len(requests_of(fake, marker))


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def edit_replies(path: str, old: str, new: str, summary: str, usage: bool = False) -> list[Reply]:
    """An editor: read the file, replace `old` with `new`, finish; `usage` reports 50, 60
    and 70 prompt tokens (10 out each), as `conftest.edit_step` does."""
    edit = {"path": path, "old_text": old, "new_text": new}
    spent: list[tuple[int, int] | None] = [(50, 10), (60, 10), (70, 10)] if usage else [None] * 3
    return [
        Reply(tool_calls=[ToolCall("read_file", {"path": path})], usage=spent[0]),
        Reply(tool_calls=[ToolCall("edit_file", edit)], usage=spent[1]),
        Reply(summary, usage=spent[2]),
    ]


def script_feature(fake: FakeOpenAIServer) -> None:
    """The two-module feature: the record, two steps, each an edit, a review with nothing."""
    fake.script_for(COMMANDER, record_reply())
    fake.script_for(PLANNER, plan_reply(*TWO_STEPS))
    fake.script_for(step_marker("s1"), *edit_step("area.py", AREA_BODY, "area done"))
    fake.script_for(step_marker("s2"), *edit_step("perimeter.py", PERIMETER_BODY, "perimeter done"))
    fake.script_for(REVIEWER, review([]))


def git_repo(root: Path) -> None:
    """`root` a git repository with everything in it committed."""

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=root,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "stubs")
