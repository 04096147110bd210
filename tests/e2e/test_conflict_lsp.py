"""A conflict found when a stopped task is continued over LSP: the file its task state names was
deleted, or the git branch was switched. The server asks the user before anything is done (a
window/showMessageRequest where the client has it; the question diagnostic and its code actions
where it has not); "Go on" reaches the model, "Stop" pauses the task."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from lsprotocol import types as t

from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.test_lsp_tests import until
from tests.e2e.test_steer import run_task
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import SUMMARY, fix_average_script

TASK = "make the failing test pass"
NOTE = "helper.py holds the mean; calc.py calls it"
HINT = "the bug is the + 1 in average()"


def noted() -> Reply:
    return Reply(tool_calls=[ToolCall("update_task", {"section": "progress", "content": NOTE})])


async def stop_at_max_steps(client: EditorClient, fake_openai: FakeOpenAIServer) -> str:
    """A task that records a note naming helper.py, then stops at max steps (3)."""
    reads = [
        Reply(tool_calls=[ToolCall("read_file", {"path": p})]) for p in ("calc.py", "README.md")
    ]
    fake_openai.script(noted(), *reads)
    started = await run_task(client, TASK)
    await client.wait_for_message("agent-lsp: failed: max steps (3)")
    return str(started["taskId"])


async def go_on(client: EditorClient, task_id: str) -> object:
    return await client.workspace_execute_command_async(
        t.ExecuteCommandParams(
            command="agentLsp.continue", arguments=[{"taskId": task_id, "hint": HINT}]
        )
    )


async def test_a_deleted_file_is_asked_about_with_a_prompt_and_go_on_reaches_the_model(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    helper = project / "helper.py"
    helper.write_text("def mean(values):\n    return sum(values) / len(values)\n")
    calc = project / "calc.py"
    before = calc.read_bytes()
    asked, answer = asyncio.Event(), asyncio.Event()

    async def user(_params: t.ShowMessageRequestParams) -> str:
        asked.set()
        await answer.wait()
        return "Go on"

    async with editor_session("vscode", project, server_env, {"maxSteps": 3}) as client:
        client.open(calc)
        task_id = await stop_at_max_steps(client, fake_openai)
        helper.unlink()  # the user moved things while the task was stopped
        client.answer_question = user
        fake_openai.script(*fix_average_script()[1:])
        assert await go_on(client, task_id) == {"taskId": task_id}
        await asyncio.wait_for(asked.wait(), 240)

        # while the question waits: nothing asked of the model, nothing edited
        await asyncio.sleep(1)
        (question,) = client.questions
        assert question.message == (
            f"agent-lsp: before going on with the task “{TASK}”: the task state names "
            "helper.py, which no longer exists (renamed or deleted?). Go on, or stop (the task "
            "pauses; continue it later with a hint)?"
        )
        assert [a.title for a in question.actions or []] == ["Go on", "Stop"]
        assert len(fake_openai.requests) == 3
        assert client.edits_received == []
        assert calc.read_bytes() == before

        answer.set()
        await client.wait_for_message(f"agent-lsp: completed: {SUMMARY}")
    assert len(client.questions) == 1
    sent = fake_openai.requests[3]["messages"]
    assert "CONFLICTS - resolve or confirm these before acting:" in sent[0]["content"]
    assert sent[-1] == {  # the hint, then the user's answer (one user message)
        "role": "user",
        "content": f"{HINT}\n\nAsked before going on, the user said go on despite: the task "
        "state names helper.py, which no longer exists (renamed or deleted?)",
    }


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, timeout=60)


async def test_a_switched_branch_is_asked_about_with_a_diagnostic_and_stop_pauses_the_task(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    (project / "helper.py").write_text("def mean(values):\n    return sum(values) / len(values)\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "start")
    calc = project / "calc.py"
    before = calc.read_bytes()
    async with editor_session("helix", project, server_env, {"maxSteps": 3}) as client:
        uri = client.open(calc)
        task_id = await stop_at_max_steps(client, fake_openai)
        git(project, "switch", "-q", "-c", "experiment")
        fake_openai.script(*fix_average_script()[1:])
        assert await go_on(client, task_id) == {"taskId": task_id}
        await until(lambda: any(d.data for d in client.diagnostics.get(uri, [])))

        (diagnostic,) = [d for d in client.diagnostics[uri] if d.data]
        assert diagnostic.message == (
            f"agent-lsp: before going on with the task “{TASK}”: the git branch changed from "
            "main to experiment. Go on, or stop (the task pauses; continue it later with a "
            "hint)? — answer with a code action on this line"
        )
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=t.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        assert actions is not None
        assert [a.title for a in actions][:2] == ["Agent: Go on", "Agent: Stop"]
        assert len(fake_openai.requests) == 3 and client.edits_received == []
        stop = actions[1]
        assert isinstance(stop, t.CodeAction) and stop.command is not None
        await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command=stop.command.command, arguments=stop.command.arguments)
        )
        paused = await client.wait_for_message("agent-lsp: paused")
        await until(lambda: not any(d.data for d in client.diagnostics.get(uri, [])))
    assert paused.message.startswith(
        "agent-lsp: paused: a conflict found when the context was rebuilt: the git branch "
        "changed from main to experiment (the user said stop) — continue task "
    )
    assert len(fake_openai.requests) == 3  # the model was not asked again
    assert client.edits_received == [] and calc.read_bytes() == before
