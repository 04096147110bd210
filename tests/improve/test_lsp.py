"""`agentLsp.improve` from an editor (the real LSP client, the scripted fake model over HTTP):
the patch offered with Apply / Show diff / Reject, applied and listed, reverted; a reject
writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types as t

from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.test_lsp_tests import until
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_cli import agent_lsp

NOTE = "Always pass -p no:randomly to pytest here."
COMPACT = [{"key": "compaction.task", "value": 0.5}]


async def execute(client: EditorClient, command: str, **args: object) -> Any:
    return await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command=command, arguments=[args] if args else [])
    )


async def test_improve_from_the_editor_apply_show_diff_reject_list_and_revert(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    assert agent_lsp("trust", "--root", str(project), env=server_env).returncode == 0
    fake_openai.script(
        Reply(
            tool_calls=[
                ToolCall("propose_improvement", {"summary": "no:randomly", "prompt_note": NOTE})
            ]
        ),
        Reply("Proposed."),
        Reply(
            tool_calls=[
                ToolCall(
                    "propose_improvement",
                    {"summary": "more steps", "config": [{"key": "maxSteps", "value": 40}]},
                )
            ]
        ),
        Reply("Proposed."),
    )
    fake_openai.default_reply = Reply("done.")
    notes = project / ".agent-lsp" / "prompt-notes.md"
    folder = project / ".agent-lsp" / "improvements"
    pending = folder / "pending.diff"
    diffs: list[str] = []  # the shown diff, as the user reads it before deciding

    def contents() -> set[str]:
        return {p.name for p in folder.iterdir()}

    async with editor_session("vscode", project, server_env) as client:
        client.answers = ["Show diff", "Apply"]

        def answer(_params: t.ShowMessageRequestParams) -> str | None:
            if pending.exists():
                diffs.append(pending.read_text())
            return client.answers.pop(0) if client.answers else None

        client.answer_question = answer
        started = await execute(client, "agentLsp.improve", request="pass -p no:randomly")
        assert set(started) == {"taskId"}
        applied = await client.wait_for_message("agent-lsp: improvement ", timeout=120)
        assert applied.type == t.MessageType.Info, applied.message
        assert "applied: no:randomly" in applied.message
        first = client.questions[0]
        assert first.message == "agent-lsp proposes: no:randomly (.agent-lsp/prompt-notes.md)"
        assert [a.title for a in first.actions or []] == ["Apply", "Show diff", "Reject"]
        [shown] = client.shown_documents  # the diff, as review mode shows a proposal's
        assert shown.uri == (project / ".agent-lsp/improvements/pending.diff").as_uri()
        [diff] = diffs
        assert "+++ b/.agent-lsp/prompt-notes.md" in diff and f"+{NOTE}" in diff
        assert contents() == {f"{applied.message.split()[2]}.json"}  # decided: no pending.diff
        first_record = contents()
        assert notes.read_text() == NOTE + "\n"
        ended = await client.wait_for_message("agent-lsp: completed")
        assert "no test runner" not in ended.message and "unverified" not in ended.message

        listed = await execute(client, "agentLsp.improveList")
        [record] = listed["improvements"]
        assert record["request"] == "pass -p no:randomly" and record["reverted"] is None

        client.messages.clear()
        client.answers = ["Show diff", "Reject"]
        await execute(client, "agentLsp.improve", request="allow more steps")
        await client.wait_for_message("agent-lsp: improvement rejected: nothing changed", 120)
        assert not (project / ".agent-lsp" / "config.toml").exists()
        assert contents() == first_record

        # yes: applied at once (the terminal's --yes), nothing asked
        client.messages.clear()
        asked = len(client.questions)
        fake_openai.script(
            Reply(
                tool_calls=[ToolCall("propose_improvement", {"summary": "t", "config": COMPACT})]
            ),
            Reply("Proposed."),
        )
        await execute(client, "agentLsp.improve", request="compact earlier", yes=True)
        applied = await client.wait_for_message("agent-lsp: improvement ", timeout=120)
        assert "applied: t (checked: settings reload" in applied.message, applied.message
        assert len(client.questions) == asked
        config = (project / ".agent-lsp" / "config.toml").read_text()
        assert "[compaction]\ntask = 0.5\n" in config
        applied_id = applied.message.split()[2]
        assert contents() == first_record | {f"{applied_id}.json"}

        reverted = await execute(client, "agentLsp.improveRevert", id=record["id"])
        assert reverted == {"message": f"improvement {record['id']} reverted"}
        await until(lambda: not notes.exists())
        assert contents() == first_record | {f"{applied_id}.json"}
        again = await execute(client, "agentLsp.improveRevert", id=record["id"])
        assert "already reverted" in again["error"]
        assert await execute(client, "agentLsp.improve") == {
            "error": 'agentLsp.improve needs {"request": "..."}'
        }
