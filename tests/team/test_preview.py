"""The editor's diff preview: before a team step's write lands, its unified diff is progress
(verbose: the diff; terse: one line, see test_presenter) and kept in the step's state; in
review mode (`applyMode: review`) the team's writes are proposals, as the single agent's."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as t

from agent_lsp.team import Orchestrator, Phase
from agent_lsp.team.orchestrator import TeamOptions
from tests.e2e.editor_client import editor_session
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer
from tests.records import read_signed
from tests.team.conftest import AREA, AREA_STUB, PERIMETER_STUB, TASK
from tests.team.helpers import make_session, script_feature

AREA_DIFF = (
    "--- a/area.py\n"
    "+++ b/area.py\n"
    "@@ -1,2 +1,2 @@\n"
    " def square_area(side):\n"
    "-    raise NotImplementedError\n"
    "+    return side * side\n"
)


async def test_verbose_progress_shows_each_writes_diff_and_the_state_keeps_it(
    shapes: Path, fake_openai: FakeOpenAIServer
) -> None:
    script_feature(fake_openai)
    session = make_session(shapes, fake_openai.base_url)
    channel = RecordingChannel()
    try:
        options = TeamOptions(workers=1, verbose=True)
        outcome = await Orchestrator(session, channel, options).run(TASK)
    finally:
        await session.aclose()

    assert outcome.phase is Phase.DONE, outcome.summary
    assert (shapes / "area.py").read_text() == AREA
    previews = [e for e in channel.events if e.message.startswith("editor s1: area.py")]
    assert [e.message for e in previews] == ["editor s1: area.py +1 \u22121\n" + AREA_DIFF.rstrip()]
    assert previews[0].data["team_step"] == "editor s1" and previews[0].data["role"] == "editor"
    saved = read_signed(shapes / f".agent-lsp/state/team/{outcome.task_id}.json", "team")
    assert saved["steps"][0]["diffs"] == [AREA_DIFF]
    assert saved["steps"][1]["diffs"][0].startswith("--- a/perimeter.py\n+++ b/perimeter.py\n")


async def test_in_review_mode_the_teams_writes_are_proposals(
    shapes: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    script_feature(fake_openai)
    options = {"applyMode": "review"}
    async with editor_session("vscode", shapes, server_env, options) as client:
        await client.workspace_execute_command_async(
            t.ExecuteCommandParams(
                command="agentLsp.runTask", arguments=[{"task": TASK, "team": True}]
            )
        )
        done = await client.wait_for_message("agent-lsp: completed", timeout=120)
        log = client.log_text()
        edits = list(client.edits_received)
    # nothing applied: the editor got no edit, the files hold what they held
    assert edits == []
    assert (shapes / "area.py").read_text() == AREA_STUB
    assert (shapes / "perimeter.py").read_text() == PERIMETER_STUB
    # the team tested its proposals: the suite passed on the proposed text
    assert "full suite: 2 passed" in done.message, done.message
    assert "proposed: " in done.message and "area.py" in done.message, done.message
    assert "agent-lsp: editor s1: area.py +1 \u22121" in log
