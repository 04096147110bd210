"""End to end: agent-lsp as a subprocess, driven by an editor-like LSP client per profile."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from lsprotocol import types as t

from tests.conftest import BUG, FIX
from tests.e2e.editor_client import REQUEST_WAIT, EditorClient, editor_session
from tests.fakes.openai_server import Error, FakeOpenAIServer, Hang, Reply
from tests.scripts import COMPLETED, TOTALS, fix_average_script, outcome, tool_messages

DIAGNOSTIC = t.Diagnostic(
    range=t.Range(start=t.Position(line=9, character=4), end=t.Position(line=9, character=42)),
    message="average([2, 4, 6]) returned 3.0, expected 4",
    source="pytest",
    severity=t.DiagnosticSeverity.Error,
)


async def ask_agent_to_fix(client: EditorClient, uri: str) -> dict[str, str]:
    actions = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=DIAGNOSTIC.range,
            context=t.CodeActionContext(diagnostics=[DIAGNOSTIC]),
        )
    )
    assert actions is not None and len(actions) in (2, 3)
    if len(actions) == 3:  # a task stopped short on this file: it can be continued from here
        goon = actions[2]
        assert isinstance(goon, t.CodeAction) and goon.command is not None
        assert goon.command.command == "agentLsp.continue"
    explain = actions[1]
    assert isinstance(explain, t.CodeAction) and explain.command is not None
    assert explain.title == "Ask agent to explain: " + DIAGNOSTIC.message
    assert explain.command.command == "agentLsp.explain"
    action = actions[0]
    assert isinstance(action, t.CodeAction)
    assert action.title == "Ask agent to fix: average([2, 4, 6]) returned 3.0, expected 4"
    assert action.kind == t.CodeActionKind.QuickFix
    assert action.command is not None and action.command.command == "agentLsp.fix"
    result = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command=action.command.command, arguments=action.command.arguments)
    )
    assert isinstance(result, dict) and set(result) == {"taskId"}
    return result


@pytest.mark.parametrize("profile", ["vscode", "neovim", "emacs", "helix"])
async def test_ask_agent_to_fix_end_to_end(
    profile: str, project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    on_disk = calc.read_text()
    async with editor_session(profile, project, server_env) as client:
        uri = client.open(calc)
        started = await ask_agent_to_fix(client, uri)
        done = await client.wait_for_message("agent-lsp: completed")

        # The edit the editor received: one minimal, versioned (where supported) change.
        assert len(client.edits_received) == 1
        params = client.edits_received[0]
        assert params.label == "agent-lsp: edit calc.py"
        supports_versions = profile != "neovim"  # Neovim 0.7 has no documentChanges
        if supports_versions:
            change = params.edit.document_changes[0]  # type: ignore[index]
            assert isinstance(change, t.TextDocumentEdit)
            assert change.text_document.version == 1
            edits = change.edits
        else:
            assert params.edit.document_changes is None
            edits = params.edit.changes[uri]  # type: ignore[index]
        # Only the characters that changed (the rest of the line, and what other servers mark
        # on it, stay), and no change annotation: nothing asks to confirm a direct-mode edit
        # (VS Code would open its refactor preview with the change unticked).
        assert list(edits) == [
            t.TextEdit(
                range=t.Range(
                    start=t.Position(line=9, character=25), end=t.Position(line=9, character=41)
                ),
                new_text="len(values",
            )
        ]
        assert params.edit.change_annotations is None
        assert client.buffers[uri] == on_disk.replace(BUG, FIX)
        assert calc.read_text() == on_disk  # unsaved in the editor, never written behind it

        assert done.type == t.MessageType.Info
        # Nobody here can ask pytest about its diagnostic again: said so (the tests passed).
        unchecked = (
            f"{COMPLETED} — diagnostic 'average([2, 4, 6]) returned 3.0, expected 4' at "
            "calc.py:10 could not be re-checked (pytest cannot be asked)"
        )
        assert re.fullmatch(re.escape(unchecked) + TOTALS, done.message), done.message
        assert ", 4 model calls, 3 tool runs, tokens: " in done.message  # the totals, too
        # The model saw the suite pass (on the buffer's text, while the disk still has the bug).
        assert len(fake_openai.requests) == 4
        assert "pytest: 2 passed, 0 failed" in tool_messages(fake_openai.requests[3])[2]

        # Progress: begin, reports, end — for clients that advertise it.
        if profile == "helix":
            assert client.progress_reports == {}
            assert any("agent-lsp: edit_file" in m.message for m in client.log_messages)
            return
        reports = [v for values in client.progress_reports.values() for v in values]
        assert isinstance(reports[0], t.WorkDoneProgressBegin)
        assert reports[0].title == "agent-lsp" and reports[0].cancellable is True
        assert any(
            isinstance(r, t.WorkDoneProgressReport) and "edit_file" in (r.message or "")
            for r in reports
        )
        assert isinstance(reports[-1], t.WorkDoneProgressEnd)
        end = reports[-1].message or ""  # the outcome, then the totals (agent_lsp.loop.summary)
        assert end.startswith("completed: ") and ", 4 model calls, 3 tool runs, tokens: " in end
        assert started["taskId"] in next(iter(client.progress_reports))


async def test_model_error_is_shown_and_the_server_stays_up(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Error(500, "upstream exploded"))
    async with editor_session(
        "vscode", project, server_env, {"model": {"maxRetries": 0}}
    ) as client:
        uri = client.open(project / "calc.py")
        started = await ask_agent_to_fix(client, uri)
        shown = await client.wait_for_message("agent-lsp: error")
        assert shown.type == t.MessageType.Error
        error = (  # what went wrong, then how to go on once the endpoint is back
            "agent-lsp: error: model error: the model endpoint answered HTTP 500: upstream exploded"
            f" — continue task {started['taskId']} with a hint: the command agentLsp.continue,"
            " or the code action “Agent: continue the stopped task…”"
        )
        assert re.fullmatch(outcome(error), shown.message)
        # Still serving: a second request works, and a new task can start.
        fake_openai.script(*fix_average_script())
        await ask_agent_to_fix(client, uri)
        await client.wait_for_message("agent-lsp: completed")


async def test_rejected_edit_is_reported_and_nothing_is_lost(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script()[:2], Reply("The editor refused."), Reply("Giving up."))
    calc = project / "calc.py"
    before = calc.read_text()
    async with editor_session("emacs", project, server_env, {"maxSteps": 4}) as client:
        client.edit_answer = lambda _: t.ApplyWorkspaceEditResult(
            applied=False, failure_reason="user said no"
        )
        uri = client.open(calc)
        await ask_agent_to_fix(client, uri)
        shown = await client.wait_for_message("agent-lsp: failed")
        assert shown.type == t.MessageType.Warning
        assert (
            "the editor rejected the edit to calc.py: user said no"
            in tool_messages(fake_openai.requests[2])[1]
        )
        assert client.buffers[uri] == before and calc.read_text() == before


async def test_cancel_stops_a_running_task(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Hang(30), Reply("too late"))
    async with editor_session("neovim", project, server_env) as client:
        uri = client.open(project / "calc.py")
        started = await ask_agent_to_fix(client, uri)
        await asyncio.to_thread(fake_openai.wait_for_requests, 1, REQUEST_WAIT)
        busy = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.runTask", arguments=[{"task": "other"}])
        )
        assert isinstance(busy, dict) and "already running" in busy["error"]
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=DIAGNOSTIC.range,
                context=t.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is not None
        cancel = actions[-1]
        assert isinstance(cancel, t.CodeAction) and cancel.title == "Cancel agent task"
        assert cancel.command is not None
        assert list(cancel.command.arguments or []) == [{"taskId": started["taskId"]}]
        result = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.cancel", arguments=cancel.command.arguments)
        )
        assert result == {"cancelled": True}
        shown = await client.wait_for_message("agent-lsp: cancelled")
        assert re.fullmatch(outcome("agent-lsp: cancelled: cancelled"), shown.message)


async def test_explain_answers_in_a_message_and_edits_nothing(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    answer = "average() divides by len(values) + 1, so the mean of 2, 4, 6 comes out as 3."
    fake_openai.script(Reply(answer))
    calc = project / "calc.py"
    before = calc.read_text()
    async with editor_session("neovim", project, server_env) as client:
        uri = client.open(calc)
        result = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.explain", arguments=[uri, DIAGNOSTIC])
        )
        assert isinstance(result, dict) and "taskId" in result
        shown = await client.wait_for_message("agent-lsp: completed")
        assert re.fullmatch(outcome(f"agent-lsp: completed: {answer}"), shown.message)
        assert client.edits_received == [] and calc.read_text() == before
        request = fake_openai.requests[0]
        tools = {tool["function"]["name"] for tool in request["tools"]}
        assert "edit_file" not in tools and "run_command" not in tools and "read_file" in tools
        assert (
            "Explain (do not edit anything) this problem in calc.py at line 10"
            in request["messages"][1]["content"]
        )
        assert len(fake_openai.requests) == 1  # no test run decides an explanation
