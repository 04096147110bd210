"""`ask_user` in an editor without showMessageRequest (Helix): the question is a diagnostic whose
code actions are the answers, and the answer reaches the model."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_tests import until
from tests.e2e.test_steer import run_task
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script, tool_messages

ASK = Reply(
    tool_calls=[ToolCall("ask_user", {"question": "Fix average()?", "options": ["Yes", "No"]})]
)


async def test_helix_answers_a_question_with_a_code_action(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(ASK, *fix_average_script())
    async with editor_session("helix", project, server_env) as client:
        uri = client.open(project / "calc.py")
        await run_task(client, "make the failing test pass")
        await until(lambda: any(d.data for d in client.diagnostics.get(uri, [])))
        (question,) = [d for d in client.diagnostics[uri] if d.data]
        assert question.message.startswith("Fix average()? — answer with a code action")
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=question.range,
                context=t.CodeActionContext(diagnostics=[question]),
            )
        )
        assert actions is not None
        titles = [a.title for a in actions]
        assert titles[:3] == ["Agent: Yes", "Agent: No", "Agent: Skip"]
        yes = actions[0]
        assert isinstance(yes, t.CodeAction) and yes.command is not None
        await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command=yes.command.command, arguments=yes.command.arguments)
        )
        await client.wait_for_message("agent-lsp: completed")
    assert "the user answered: Yes" in tool_messages(fake_openai.requests[1])[0]
