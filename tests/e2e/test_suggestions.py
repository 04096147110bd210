"""Diagnostics-triggered suggestions: a fix prepared in the background, offered with its edit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_tests import until
from tests.e2e.test_proxy import BROKEN, FIXED, module, pyflakes_diagnostics, wrapped
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

__all__ = ["module"]  # the fixture


async def test_a_new_diagnostic_gets_a_ready_fix(
    module: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(
        Reply(
            tool_calls=[
                ToolCall(
                    "edit_file",
                    {"path": "stats.py", "old_text": "sum(valeus)", "new_text": "sum(values)"},
                )
            ]
        ),
        Reply("Fixed the typo."),
    )
    options = {"suggestions": {"enabled": True}}
    async with editor_session("vscode", module, server_env, options, wrapped()) as client:
        uri = client.open(module / "stats.py")
        undefined = next(
            d for d in await pyflakes_diagnostics(client, uri) if "valeus" in d.message
        )
        await until(lambda: len(fake_openai.requests) >= 2)  # the agent worked in the background

        async def suggestion() -> t.CodeAction | None:
            actions = await client.text_document_code_action_async(
                t.CodeActionParams(
                    text_document=t.TextDocumentIdentifier(uri=uri),
                    range=undefined.range,
                    context=t.CodeActionContext(diagnostics=[undefined]),
                )
            )
            return next(
                (
                    a
                    for a in actions or []
                    if isinstance(a, t.CodeAction) and a.title.startswith("Apply agent suggestion")
                ),
                None,
            )

        action = None
        for _ in range(100):  # ready once the background task has finished
            if (action := await suggestion()) is not None:
                break
            await asyncio.sleep(0.1)
        assert action is not None
        assert action.title == "Apply agent suggestion: undefined name 'valeus'"
        assert action.is_preferred and action.edit is not None  # the fix itself, to preview
        assert client.edits_received == [] and client.buffers[uri] == BROKEN  # nothing applied
        assert not any("agent-lsp: completed" in m.message for m in client.messages)  # quiet
        client.apply(t.ApplyWorkspaceEditParams(edit=action.edit))  # the user picks it
        assert client.buffers[uri] == FIXED
        # The model saw the diagnostic it was asked about.
        assert "undefined name 'valeus'" in fake_openai.requests[0]["messages"][1]["content"]
        assert len(fake_openai.requests) == 2  # one suggestion, not one per diagnostic


async def test_suggestions_are_off_by_default(
    module: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    async with editor_session("vscode", module, server_env, None, wrapped()) as client:
        uri = client.open(module / "stats.py")
        await pyflakes_diagnostics(client, uri)
        await asyncio.sleep(3)
        assert fake_openai.requests == []
