"""The retriever locates in a big file, the orchestrator reads those lines itself: the editor's
first message holds the located lines, numbered, and nothing else of the file; a location
outside its file is dropped with a note; a name the project does not know is flagged to a team
editor at edit time."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.team import Phase
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.team.conftest import (
    AREA_BODY,
    COMMANDER,
    PERIMETER,
    PLANNER,
    REVIEWER,
    STUB_BODY,
    locate_marker,
    locate_reply,
    plan_reply,
    record_reply,
    review,
    step_marker,
)
from tests.team.helpers import first_user, requests_of, run_team, tool_names

OUTSIDE = "SENTINEL_OUTSIDE_THE_RANGES = 1"
HELPERS = "".join(f"\n\ndef helper_{n}():\n    return {n}\n" for n in range(120))  # a big file
AREA_FILE = "def square_area(side):\n" + STUB_BODY + HELPERS + f"\n{OUTSIDE}\n"


async def test_the_editor_gets_the_located_lines_only_and_unknown_names_are_flagged(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    (shapes / "area.py").write_text(AREA_FILE)
    (shapes / "perimeter.py").write_text(PERIMETER)
    lines = AREA_FILE.count("\n")
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "implement square_area", "files": ["area.py"]})
    )
    fake_openai.script_for(
        locate_marker("s1"),
        locate_reply(
            ("area.py", 1, 2, "the stub"),
            ("area.py", 5, 6, "a helper"),
            ("area.py", 900, 909, "past the end"),
            ("missing.py", 1, 3, "no such file"),
        ),
    )
    hallucinated = {"path": "area.py", "old_text": STUB_BODY, "new_text": "    return sq(side)\n"}
    right = {"path": "area.py", "old_text": STUB_BODY, "new_text": AREA_BODY}
    fake_openai.script_for(
        step_marker("s1"),
        Reply(tool_calls=[ToolCall("edit_file", hallucinated)]),
        Reply(tool_calls=[ToolCall("edit_file", right)]),
        Reply("area done"),
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai)

    assert outcome.phase is Phase.DONE, outcome.summary
    assert (shapes / "area.py").read_text() == AREA_FILE.replace(STUB_BODY, AREA_BODY)
    retriever = requests_of(fake_openai, locate_marker("s1"))
    assert len(retriever) == 1
    assert not tool_names(retriever[0]) & {"edit_file", "write_file", "run_command", "run_tests"}
    editor = requests_of(fake_openai, step_marker("s1"))
    told = first_user(editor[0])
    assert (
        "## The code of your step (the lines the retriever located)\n"
        "### area.py lines 1-2: the stub\n"
        "   1| def square_area(side):\n"
        "   2|     raise NotImplementedError\n\n"
        "### area.py lines 5-6: a helper\n"
        "   5| def helper_0():\n"
        "   6|     return 0\n\n"
        f"(dropped area.py:900-909: area.py has {lines} lines)\n\n"
        "(dropped missing.py:1-3: no such file)"
    ) in told
    assert OUTSIDE not in told and "helper_7" not in told  # never the whole file
    # the name the project does not know was flagged at edit time, nothing written then
    flagged = next(m["content"] for m in editor[1]["messages"] if m["role"] == "tool")
    assert "not written: `sq` defined nowhere in the project" in flagged
    assert [r for r in outcome.usage] == ["commander", "planner", "retriever", "editor", "reviewer"]


async def test_a_located_secret_file_or_a_path_out_of_the_project_is_never_shown(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    # the retriever's model chooses the paths: its lines are read as the editor's own read_file
    # would read them, so a secret file or a path out of the project never reaches a model
    secret = "API_TOKEN=sk-live-SENTINEL-1234567890"
    (shapes / "area.py").write_text(AREA_FILE)  # big: the retriever runs
    (shapes / ".env").write_text(secret + "\n")
    (shapes / "perimeter.py").write_text(PERIMETER)
    outside = shapes.parent / "outside.txt"
    outside.write_text("SENTINEL_OUT_OF_THE_PROJECT\n")
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER, plan_reply({"id": "s1", "goal": "implement square_area", "files": ["area.py"]})
    )
    fake_openai.script_for(
        locate_marker("s1"),
        locate_reply((".env", 1, 1, "the token"), ("../outside.txt", 1, 1, "out")),
    )
    right = {"path": "area.py", "old_text": STUB_BODY, "new_text": AREA_BODY}
    fake_openai.script_for(
        step_marker("s1"),
        Reply(tool_calls=[ToolCall("read_file", {"path": "area.py"})]),
        Reply(tool_calls=[ToolCall("edit_file", right)]),
        Reply("area done"),
    )
    fake_openai.script_for(REVIEWER, review([]))
    outcome = await run_team(shapes, fake_openai)

    assert outcome.phase is Phase.DONE, outcome.summary
    every_request = "\n".join(str(r) for r in fake_openai.requests)
    assert "SENTINEL-1234567890" not in every_request
    assert "SENTINEL_OUT_OF_THE_PROJECT" not in every_request
    told = first_user(requests_of(fake_openai, step_marker("s1"))[0])
    assert "(dropped .env:1-1: " in told and "(dropped ../outside.txt:1-1: " in told
