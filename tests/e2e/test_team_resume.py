"""A team task from the editor: `agentLsp.cancel` leaves its checkpoint resumable; when the
server starts again it offers "Resume team task …?" (Resume / Discard); Resume finishes it
from the step it stopped at, Discard marks it discarded. The real LSP client, the fake model
scripted per role and step."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from agent_lsp.team import Phase, TeamStore
from agent_lsp.team.state import Step, StepStatus
from tests.e2e.editor_client import editor_session
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.records import read_signed
from tests.team.conftest import (
    COMMANDER,
    PLANNER,
    REVIEWER,
    locate_marker,
    locate_reply,
    plan_reply,
    record_reply,
    review,
    step_marker,
)

TASK = "Mark both lists done."
STEPS = (
    {"id": "s1", "goal": "mark the notes done", "files": ["notes.txt"]},
    {"id": "s2", "goal": "mark the todo list done", "files": ["todo.txt"], "depends_on": ["s1"]},
)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "lists"  # no test runner: no suite to run
    root.mkdir()
    (root / "notes.txt").write_text("todo\n")
    (root / "todo.txt").write_text("todo\n")
    return root


def edit(path: str) -> list[Reply]:
    change = {"path": path, "old_text": "todo\n", "new_text": "done\n"}
    return [
        Reply(tool_calls=[ToolCall("read_file", {"path": path})]),
        Reply(tool_calls=[ToolCall("edit_file", change)]),
        Reply(f"{path} done"),
    ]


def count(fake: FakeOpenAIServer, marker: str) -> int:
    firsts = [
        next(m["content"] for m in r["messages"] if m["role"] == "user") for r in fake.requests
    ]
    return sum(marker in text for text in firsts)


def saved(root: Path) -> dict[str, Any]:
    (path,) = (root / ".agent-lsp" / "state" / "team").glob("*.json")
    return read_signed(path, "team")


async def test_a_cancelled_team_task_is_offered_when_the_server_starts_and_resumed(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    root = project(tmp_path)
    release = threading.Event()

    def hang(_: dict[str, Any]) -> Reply:  # s2's first request: cancelled while it waits
        release.wait(60)
        return Reply("too late")

    fake_openai.script_for(COMMANDER, record_reply())

    fake_openai.script_for(PLANNER, plan_reply(*STEPS))
    fake_openai.script_for(locate_marker("s1"), locate_reply(), locate_reply())
    fake_openai.script_for(step_marker("s1"), *edit("notes.txt"))
    fake_openai.script_for(locate_marker("s2"), locate_reply(), locate_reply())
    fake_openai.script_for(step_marker("s2"), hang, *edit("todo.txt"))
    fake_openai.script_for(REVIEWER, review([]))
    try:
        async with editor_session("vscode", root, server_env) as client:
            run = t.ExecuteCommandParams(
                command="agentLsp.runTask", arguments=[{"task": TASK, "team": True}]
            )
            started = await client.workspace_execute_command_async(run)
            assert isinstance(started, dict) and "taskId" in started, started
            for _ in range(1200):
                if count(fake_openai, step_marker("s2")):
                    break
                await asyncio.sleep(0.05)
            cancel = t.ExecuteCommandParams(command="agentLsp.cancel", arguments=[])
            await client.workspace_execute_command_async(cancel)
            cancelled = await client.wait_for_message("agent-lsp: cancelled", timeout=60)
            assert list(client.buffers) == [(root / "notes.txt").as_uri()]
            client.save((root / "notes.txt").as_uri())  # the user saves s1's edit
    finally:
        release.set()
    assert cancelled.message.startswith(
        "agent-lsp: cancelled: cancelled — the team task stays resumable: resume it with "
        "`agent-lsp run --resume`, or accept the resume offer when the server starts again"
    )
    state = saved(root)
    assert state["phase"] == "EXECUTING" and not state["discarded"]
    assert [s["status"] for s in state["steps"]] == ["done", "running"]
    assert (root / "notes.txt").read_text() == "done\n"
    assert (root / "todo.txt").read_text() == "todo\n"

    async with editor_session("vscode", root, server_env) as client:
        client.answer_question = lambda _params: "Resume"
        done = await client.wait_for_message("agent-lsp: completed", timeout=120)
        asked = client.questions
        buffers = {
            Path(uri.removeprefix("file://")).name: text for uri, text in client.buffers.items()
        }
    assert [q.message for q in asked] == [
        f"agent-lsp: Resume team task “{TASK}”? It stopped in EXECUTING (1 of 2 steps done)."
    ]
    assert [a.title for a in asked[0].actions or []] == ["Resume", "Discard"]
    assert done.message.startswith("agent-lsp: completed: done: 2 steps (s1, s2)")
    assert buffers == {"todo.txt": "done\n"}  # s2's edit, through the editor
    assert count(fake_openai, PLANNER) == 1  # not planned again
    assert count(fake_openai, step_marker("s1")) == 3  # s1 not run again
    assert count(fake_openai, step_marker("s2")) == 4  # the cancelled request + s2's three
    state = saved(root)
    assert state["phase"] == "DONE" and [s["attempts"] for s in state["steps"]] == [1, 2]


async def test_discard_marks_the_interrupted_team_task_discarded(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    root = project(tmp_path)
    store = TeamStore(root)
    state = store.new(TASK)
    store.move(state, Phase.PLANNING)
    state.steps = [Step(id="s1", goal="mark the notes done", status=StepStatus.RUNNING)]
    store.move(state, Phase.EXECUTING)
    async with editor_session("vscode", root, server_env) as client:
        client.answer_question = lambda _params: "Discard"
        for _ in range(1200):
            if saved(root)["phase"] != "EXECUTING":
                break
            await asyncio.sleep(0.05)
        asked = [q.message for q in client.questions]
    assert asked == [
        f"agent-lsp: Resume team task “{TASK}”? It stopped in EXECUTING (0 of 1 steps done)."
    ]
    after = saved(root)
    assert after["phase"] == "FAILED" and after["discarded"] is True
    assert after["reason"] == "discarded by the user"
    assert TeamStore(root).pending() is None
    assert fake_openai.requests == []
    assert (root / "notes.txt").read_text() == "todo\n"


async def test_a_failed_team_task_continues_with_the_hint_from_the_editor(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    root = project(tmp_path)
    hint = "HINT-3: no check to run, mark the todo list done instead"
    check = {"id": "s2", "goal": "run the list check", "files": ["todo.txt"], "role": "run"}
    fake_openai.script_for(COMMANDER, record_reply())
    fake_openai.script_for(
        PLANNER,
        plan_reply(STEPS[0], check),
        plan_reply({"id": "s3", "goal": "mark the todo list done", "files": ["todo.txt"]}),
    )
    fake_openai.script_for(locate_marker("s1"), locate_reply(), locate_reply())
    fake_openai.script_for(step_marker("s1"), *edit("notes.txt"))
    fake_openai.script_for(step_marker("s2"), Reply("nothing to run"))
    fake_openai.script_for(locate_marker("s3"), locate_reply(), locate_reply())
    fake_openai.script_for(step_marker("s3"), *edit("todo.txt"))
    fake_openai.script_for(REVIEWER, review([]))
    async with editor_session("vscode", root, server_env) as client:
        uri = client.open(root / "notes.txt")
        run = t.ExecuteCommandParams(
            command="agentLsp.runTask", arguments=[{"task": TASK, "team": True}]
        )
        started = await client.workspace_execute_command_async(run)
        assert isinstance(started, dict) and "taskId" in started, started
        task_id = started["taskId"]
        failed = await client.wait_for_message("agent-lsp: failed: failed in EXECUTING", 120)
        assert f"continue task {task_id} with a hint" in failed.message
        whole = t.Range(start=t.Position(line=0, character=0), end=t.Position(line=0, character=0))
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=whole,
                context=t.CodeActionContext(diagnostics=[]),
            )
        )
        offered = [a for a in actions or [] if a.title == "Agent: continue the stopped task…"]
        assert len(offered) == 1
        go_on = t.ExecuteCommandParams(
            command="agentLsp.continue", arguments=[{"taskId": task_id, "hint": hint}]
        )
        assert await client.workspace_execute_command_async(go_on) == {"taskId": task_id}
        done = await client.wait_for_message("agent-lsp: completed", timeout=120)
        again = t.ExecuteCommandParams(command="agentLsp.continue", arguments=[{"hint": "more"}])
        refused = await client.workspace_execute_command_async(again)
    assert done.message.startswith("agent-lsp: completed: done: 2 steps (s1, s3)")
    assert "ended DONE: nothing to continue" in str(refused)
    planners = [
        r for r in fake_openai.requests if PLANNER in str(r["messages"][1].get("content", ""))
    ]
    assert len(planners) == 2
    assert f"The user's hint: {hint}" in planners[1]["messages"][1]["content"]
    assert "step failed: s2: the executor ran no command" in planners[1]["messages"][1]["content"]
    assert count(fake_openai, step_marker("s1")) == 3  # s1 not run again
    state = saved(root)
    assert state["phase"] == "DONE" and [c["hint"] for c in state["continued"]] == [hint]
