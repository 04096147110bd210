"""Edits land in the editor: files the editor has not opened go through workspace/applyEdit too
(the editor loads them, unsaved), and an edit the editor takes long to answer (a user reviewing
it) is waited for, said to be waited for, and cancellable — never a hidden timeout."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from lsprotocol import types as t

from tests.conftest import BUG, FIX
from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.test_lsp_tests import until
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import COMPLETED, fix_average_script, outcome, tool_messages

# The failure as the test file shows it (agent-lsp's own test diagnostic): the fix is elsewhere.
FAILURE = t.Diagnostic(
    range=t.Range(start=t.Position(line=8, character=0), end=t.Position(line=8, character=34)),
    message="tests/test_calc.py::test_average: assert 3.0 == 4",
    source="agent-lsp",
    severity=t.DiagnosticSeverity.Error,
)
# The fix as the editor receives it: only the characters that change, on line 10.
FIX_EDIT = t.TextEdit(
    range=t.Range(start=t.Position(line=9, character=25), end=t.Position(line=9, character=41)),
    new_text="len(values",
)


async def fix(client: EditorClient, uri: str, diagnostic: t.Diagnostic) -> str:
    result = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentLsp.fix", arguments=[uri, diagnostic])
    )
    assert isinstance(result, dict) and "taskId" in result
    return str(result["taskId"])


def edits_to(client: EditorClient, uri: str) -> list[tuple[int | None, list[t.TextEdit]]]:
    """Every edit the editor received for `uri`: (the version it named, the text edits)."""
    found: list[tuple[int | None, list[t.TextEdit]]] = []
    for params in client.edits_received:
        for change in params.edit.document_changes or []:
            assert isinstance(change, t.TextDocumentEdit)
            if change.text_document.uri == uri:
                edits = [e for e in change.edits if isinstance(e, t.TextEdit)]
                found.append((change.text_document.version, edits))
        for target, edits in (params.edit.changes or {}).items():
            if target == uri:
                found.append((None, list(edits)))
    return found


@pytest.mark.parametrize(
    ("profile", "closed_files"),
    [("vscode", "open"), ("neovim", "open"), ("emacs", "silent")],
)
async def test_a_fix_in_a_file_not_open_lands_in_the_editor_unsaved(
    profile: str,
    closed_files: str,
    project: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    on_disk = calc.read_text()
    calc_uri = calc.resolve().as_uri()
    async with editor_session(profile, project, server_env) as client:
        client.closed_files = closed_files
        test_uri = client.open(project / "tests" / "test_calc.py")  # calc.py is not open
        await fix(client, test_uri, FAILURE)
        done = await client.wait_for_message("agent-lsp: completed")
        assert re.fullmatch(outcome(COMPLETED, recheck="gone"), done.message)

        # The editor got the edit (versionless: it had not opened the file) and holds it,
        # unsaved; nothing was written behind it.
        assert edits_to(client, calc_uri) == [(None, [FIX_EDIT])]
        assert client.buffers[calc_uri] == on_disk.replace(BUG, FIX)
        assert calc.read_text() == on_disk
        # The tests ran on the editor's text (the fix), not on the disk (the bug).
        assert "pytest: 2 passed, 0 failed" in tool_messages(fake_openai.requests[3])[2]

        # The undo journal has the step, and undoing it goes through the editor as well.
        result = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.undo", arguments=[{"uri": test_uri}])
        )
        assert result == {"status": "accepted"}
        undone = await client.wait_for_message("undid step")
        assert "restored calc.py" in undone.message
        assert client.buffers[calc_uri] == on_disk
        assert calc.read_text() == on_disk
        assert len(edits_to(client, calc_uri)) == 2


async def test_after_the_user_saves_the_agent_reads_the_disk_again(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """An edited buffer the server was never told about counts until the file is saved."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    calc_uri = calc.resolve().as_uri()
    async with editor_session("emacs", project, server_env) as client:
        client.closed_files = "silent"
        test_uri = client.open(project / "tests" / "test_calc.py")
        await fix(client, test_uri, FAILURE)
        await client.wait_for_message("agent-lsp: completed")
        client.save(calc_uri)
        calc.write_text(calc.read_text() + "# changed on disk afterwards\n")
        client.messages.clear()
        assert await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.runTests", arguments=[])
        ) == {"status": "started"}
        await client.wait_for_message("agent-lsp: tests: 2 passed, 0 failed")


async def test_an_edit_under_review_is_waited_for_and_applied(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """The editor asks the user to confirm (Eglot's prompt, a preview): it answers only when the
    user decides, long after editTimeout. The task says that it waits, then goes on."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    on_disk = calc.read_text()
    async with editor_session("vscode", project, server_env, {"editTimeout": 1}) as client:

        async def user_reviews(params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
            await client.wait_for_log("waiting for the editor to apply the edit to calc.py")
            return client.apply(params)

        client.edit_answer = user_reviews
        uri = client.open(calc)
        await fix(client, uri, FAILURE)
        done = await client.wait_for_message("agent-lsp: completed", timeout=120)
        assert re.fullmatch(outcome(COMPLETED, recheck="gone"), done.message)
        assert client.buffers[uri] == on_disk.replace(BUG, FIX)
        reports = [
            r.message
            for values in client.progress_reports.values()
            for r in values
            if isinstance(r, t.WorkDoneProgressReport)
        ]
        assert (
            "waiting for the editor to apply the edit to calc.py (confirm it there, or cancel "
            "the task)" in reports
        )
        assert "pytest: 2 passed, 0 failed" in tool_messages(fake_openai.requests[3])[2]


async def test_a_task_waiting_for_the_editor_can_be_cancelled(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    on_disk = calc.read_text()
    never = asyncio.Event()
    async with editor_session("neovim", project, server_env, {"editTimeout": 1}) as client:

        async def user_walked_away(_: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
            await never.wait()
            return t.ApplyWorkspaceEditResult(applied=False, failure_reason="closed")

        client.edit_answer = user_walked_away
        uri = client.open(calc)
        task_id = await fix(client, uri, FAILURE)
        await client.wait_for_log("waiting for the editor to apply the edit to calc.py")
        assert not [m for m in client.messages if m.message.startswith("agent-lsp: ")]
        result = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.cancel", arguments=[{"taskId": task_id}])
        )
        assert result == {"cancelled": True}
        shown = await client.wait_for_message("agent-lsp: cancelled")
        assert re.fullmatch(outcome("agent-lsp: cancelled: cancelled"), shown.message)
        assert client.buffers[uri] == on_disk and calc.read_text() == on_disk
        never.set()


async def test_an_applied_edit_whose_change_comes_late_is_waited_for(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """The editor answers `applied` at once but reports the new text later than editTimeout
    (a loaded machine, a client that batches didChange): not a failure."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    on_disk = calc.read_text()
    async with editor_session("emacs", project, server_env, {"editTimeout": 1}) as client:
        pending: list[asyncio.Task[None]] = []

        def answer_now_change_later(
            params: t.ApplyWorkspaceEditParams,
        ) -> t.ApplyWorkspaceEditResult:
            async def later() -> None:
                await client.wait_for_log("waiting for the editor to show the edit to calc.py")
                client.apply(params)

            pending.append(asyncio.ensure_future(later()))
            return t.ApplyWorkspaceEditResult(applied=True)

        client.edit_answer = answer_now_change_later
        uri = client.open(calc)
        await fix(client, uri, FAILURE)
        done = await client.wait_for_message("agent-lsp: completed", timeout=120)
        assert re.fullmatch(outcome(COMPLETED, recheck="gone"), done.message)
        await until(lambda: all(task.done() for task in pending))
        assert client.buffers[uri] == on_disk.replace(BUG, FIX)
        assert "pytest: 2 passed, 0 failed" in tool_messages(fake_openai.requests[3])[2]
