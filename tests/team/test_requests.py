"""What each role's model request carries, and what it does not: only its own tool schemas,
a short system prompt of the team's (not the single agent's), and for an edit step whose files
are small no retriever call, the files' numbered lines in the editor's first message instead;
the retriever still runs on a big file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_lsp.team import Phase
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.team.conftest import (
    AREA_BODY,
    COMMANDER,
    PERIMETER,
    PERIMETER_BODY,
    PERIMETER_STUB,
    PLANNER,
    REVIEWER,
    STUB_BODY,
    TWO_STEPS,
    locate_marker,
    locate_reply,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import first_user, requests_of, run_team, tool_names

HELPERS = "".join(f"\n\ndef helper_{n}():\n    return {n}\n" for n in range(150))
BIG_AREA = "def square_area(side):\n" + STUB_BODY + HELPERS  # 600 lines: located, not given
SINGLE_AGENT_LINES = ("After editing, call run_tests", "update_task", "Project map")


def system_of(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "system")


async def test_each_role_is_sent_its_own_tools_and_a_short_system_prompt_and_small_files_skip_the_retriever(  # noqa: E501
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    (shapes / "area.py").write_text(BIG_AREA)
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(PLANNER, plan_reply(*TWO_STEPS))
    fake_openai.script_for(locate_marker("s1"), locate_reply(("area.py", 1, 2, "the stub")))
    area = {"path": "area.py", "old_text": STUB_BODY, "new_text": AREA_BODY}
    perimeter = {"path": "perimeter.py", "old_text": STUB_BODY, "new_text": PERIMETER_BODY}
    for step, edit in (("s1", area), ("s2", perimeter)):  # no read_file: the lines are given
        fake_openai.script_for(
            step_marker(step), Reply(tool_calls=[ToolCall("edit_file", edit)]), Reply("done")
        )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai)

    assert outcome.phase is Phase.DONE, outcome.summary
    assert (shapes / "area.py").read_text() == BIG_AREA.replace(STUB_BODY, AREA_BODY)
    assert (shapes / "perimeter.py").read_text() == PERIMETER
    # the big file was located by the retriever; the small one was not: no retriever request
    assert len(requests_of(fake_openai, locate_marker("s1"))) == 1
    assert requests_of(fake_openai, locate_marker("s2")) == []
    assert len(requests_of(fake_openai, "[team role: retriever]")) == 1
    s1 = first_user(requests_of(fake_openai, step_marker("s1"))[0])
    assert "### area.py lines 1-2: the stub\n   1| def square_area(side):\n" in s1
    assert "helper_0" not in s1  # located lines only, never the big file
    s2 = first_user(requests_of(fake_openai, step_marker("s2"))[0])
    whole = "".join(f"{n:>4}| {line}\n" for n, line in enumerate(PERIMETER_STUB.splitlines(), 1))
    assert (
        "## The code of your step (the lines the retriever located)\n"
        "### perimeter.py lines 1-2: the whole file\n" + whole.rstrip("\n")
    ) in s2
    # each role's requests carry its own tool schemas only
    expected = {
        COMMANDER: {"read_file", "list_files", "search_text"},
        PLANNER: {"read_file", "list_files", "search_text", "ask_user"},
        "[team role: retriever]": {"read_file", "search_text", "find_symbol"},
        "[team role: editor]": {"read_file", "edit_file", "write_file", "ask_user"},
        REVIEWER: {"read_file"},  # given the diff: no edit, write, run or git tools
    }
    for marker, tools in expected.items():
        requests = requests_of(fake_openai, marker)
        assert requests, marker
        assert all(tool_names(r) == tools for r in requests), (marker, tool_names(requests[0]))
    # the team's short system prompt, not the single agent's; edit rules for the editor only
    for request in fake_openai.requests:
        system = system_of(request)
        assert system.startswith("You are one role of agent-lsp's team, on the project at ")
        assert "Project: " in system  # the project's profile (and its prompt notes) kept
        assert not any(line in system for line in SINGLE_AGENT_LINES), system
        editor = "[team role: editor]" in first_user(request)
        assert ("edit_file replaces old_text" in system) is editor
