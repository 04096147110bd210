"""The project's memory reaches a team's roles through the seam the single agent's comes by
(the starting context, at the head of the system prompt), each role only the parts its context
keys name: the rules (AGENTS.md…) for every role, the recalled experiences for the planner and
the editor, the conventions (the project state) for the reviewer; one init run for the whole
team task, its warnings said once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_lsp.team import Phase
from agent_lsp.team.orchestrator import TeamOptions
from agent_lsp.team.roles import ROLES
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer
from tests.team.conftest import COMMANDER, PLANNER, REVIEWER, step_marker
from tests.team.helpers import requests_of, run_team, script_feature

RULE = "RULE-7: square functions take the side first"
CONVENTION = "CONVENTION-3: return expressions, never assign then return"
EXPERIENCE = """# Square area stubs in the shapes project

- date: 2026-11-30
- project: shapes
- event: fail-fix-pass
- tags: square, area, perimeter
- files: area.py, perimeter.py
- symbols: square_area, square_perimeter

## Goal
Implement square_area.

## Steps
1. replaced the stub body

## Key decisions
- EXPERIENCE-5: side * side, not side ** 2 - the linter flags the power

## Pitfalls
-

## Open questions
-
"""


def with_memory(root: Path) -> None:
    """Rules, conventions, an experience about these modules, and one unreadable state file
    (a warning of the init run)."""
    (root / "AGENTS.md").write_text(f"# Agents\n- {RULE}\n")
    state = root / ".agent-lsp" / "state" / "project"
    state.mkdir(parents=True)
    (state / "conventions.md").write_text(f"# Conventions\n- {CONVENTION}\n")
    (state / "broken.md").write_bytes(b"\0\0binary")
    memory = root / ".agent-lsp" / "memory"
    memory.mkdir(parents=True)
    (memory / "2026-11-30--square-area-stubs.md").write_text(EXPERIENCE)


def system_of(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "system")


def log_of(root: Path) -> list[dict[str, Any]]:
    [log] = list((root / ".agent-lsp" / "logs").glob("*.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_each_role_declares_the_memory_it_is_given() -> None:
    keys = {role.name: set(role.keys) & {"rules", "experience", "conventions"} for role in ROLES}
    assert all("rules" in mine for mine in keys.values()), keys
    assert {name for name, mine in keys.items() if "experience" in mine} == {"planner", "editor"}
    assert {name for name, mine in keys.items() if "conventions" in mine} == {"reviewer"}


async def test_each_role_gets_the_parts_of_the_project_memory_its_keys_name_built_once(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    with_memory(shapes)
    script_feature(fake_openai)
    channel = RecordingChannel()
    outcome = await run_team(shapes, fake_openai, options=TeamOptions(workers=2), channel=channel)
    assert outcome.phase is Phase.DONE, outcome.summary

    roles = {
        "commander": requests_of(fake_openai, COMMANDER),
        "planner": requests_of(fake_openai, PLANNER),
        "editor": requests_of(fake_openai, step_marker("s1"))
        + requests_of(fake_openai, step_marker("s2")),
        "reviewer": requests_of(fake_openai, REVIEWER),
    }
    given = {
        name: {
            mark
            for mark in (RULE, "EXPERIENCE-5", CONVENTION)
            if all(mark in system_of(r) for r in requests)
        }
        for name, requests in roles.items()
    }
    assert all(requests for requests in roles.values()), roles
    assert given == {
        "commander": {RULE},
        "planner": {RULE, "EXPERIENCE-5"},
        "editor": {RULE, "EXPERIENCE-5"},
        "reviewer": {RULE, CONVENTION},
    }
    for name, requests in roles.items():  # what a role's keys do not name never reaches it
        for request in requests:
            text = json.dumps(request["messages"])
            if name != "reviewer":
                assert "CONVENTION-3" not in text, name
            if name not in ("planner", "editor"):
                assert "EXPERIENCE-5" not in text, name
    # one init run for the whole task, its warning said once; the recall said once
    entries = [e for e in log_of(shapes) if e.get("task_id") == outcome.task_id]
    assert [e["kind"] for e in entries].count("init") == 1
    messages = [e.message for e in channel.events]
    broken = [m for m in messages if m.startswith("WARN") and "broken.md" in m]
    assert len(broken) == 1, messages
    assert sum(m.startswith("memory: recalled") for m in messages) == 1, messages


async def test_a_project_without_memory_gives_the_roles_nothing_more(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    script_feature(fake_openai)
    outcome = await run_team(shapes, fake_openai)
    assert outcome.phase is Phase.DONE, outcome.summary
    for request in fake_openai.requests:
        assert "The project's memory" not in system_of(request)
