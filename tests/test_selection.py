"""What the user points at reaches the model: the selected text (as the editor holds it,
unsaved), or the cursor's lines — through the LSP server's code action "Ask agent about the
selection…", `agentLsp.runTask` with a `range`, and `agent-lsp run --at FILE:LINE[-LINE]`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.test_cli import agent_lsp

AVERAGE = (
    "def average(values: list[float]) -> float:\n"
    '    """The arithmetic mean of a non-empty list."""\n'
    "    return sum(values) / (len(values) + 1)"
)


def first_user_message(fake: FakeOpenAIServer) -> str:
    messages = fake.requests[0]["messages"]
    return next(m["content"] for m in messages if m["role"] == "user")


def whole_lines(first: int, last: int) -> t.Range:
    """Lines `first`..`last` (0-based) selected whole, as editors send a line selection."""
    return t.Range(
        start=t.Position(line=first, character=0), end=t.Position(line=last + 1, character=0)
    )


async def test_the_selection_action_sends_the_unsaved_selected_text(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.default_reply = Reply("It averages; the + 1 is wrong.")
    async with editor_session("vscode", project, server_env) as client:
        uri = client.open(project / "calc.py")
        client.type_at_top(uri, "# unsaved line\n")  # lines move down by one, on screen only
        selected = whole_lines(8, 10)  # average(), as the buffer has it now
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=selected,
                context=t.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is not None
        (action,) = [a for a in actions if isinstance(a, t.CodeAction)]
        assert action.title == "Ask agent about the selection…"
        assert action.kind == "refactor.agent-lsp.selection"
        assert action.command is not None and action.command.command == "agentLsp.askSelection"
        # a client with a prompt adds what the user typed
        arguments = [{**action.command.arguments[0], "task": "why is this wrong?"}]  # type: ignore[index]
        started = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command=action.command.command, arguments=arguments)
        )
        assert isinstance(started, dict) and "taskId" in started, started
        await client.wait_for_message("agent-lsp: ", timeout=240)
        # a bare cursor offers no such action (editors ask on every move)
        cursor = t.Range(start=t.Position(line=9, character=3), end=t.Position(line=9, character=3))
        none = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=cursor,
                context=t.CodeActionContext(diagnostics=[]),
            )
        )
        assert not [a for a in none or [] if isinstance(a, t.CodeAction) and "selection" in a.title]
    text = first_user_message(fake_openai)
    assert text.startswith("why is this wrong?"), text
    assert f"The user selected this in calc.py, lines 9-11:\n```\n{AVERAGE}\n```" in text, text
    assert "The user is looking at" not in text


async def test_run_task_with_a_range_and_without_a_typed_instruction(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.default_reply = Reply("Fine.")
    async with editor_session("neovim", project, server_env) as client:
        uri = client.open(project / "calc.py")
        started = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(
                command="agentLsp.askSelection",
                arguments=[
                    {
                        "uri": uri,
                        "range": {
                            "start": {"line": 4, "character": 11},
                            "end": {"line": 4, "character": 16},
                        },
                    }
                ],
            )
        )
        assert isinstance(started, dict) and "taskId" in started, started
        await client.wait_for_message("agent-lsp: ", timeout=240)
        first = first_user_message(fake_openai)
        before = len(fake_openai.requests)
        started = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(
                command="agentLsp.runTask",
                arguments=[
                    {
                        "task": "explain this line",
                        "uri": uri,
                        "range": {
                            "start": {"line": 9, "character": 4},
                            "end": {"line": 9, "character": 4},
                        },
                    }
                ],
            )
        )
        assert isinstance(started, dict) and "taskId" in started, started
        for _ in range(2400):
            if len(fake_openai.requests) > before:
                break
            await asyncio.sleep(0.1)
    # no instruction typed: the default one, with the selected word
    assert first.startswith("Look at the selected code: say briefly what it does"), first
    assert "The user selected this in calc.py, line 5:\n```\na + b\n```" in first, first
    second = fake_openai.requests[before]["messages"]
    text = next(m["content"] for m in second if m["role"] == "user")
    assert text.startswith("explain this line"), text
    assert "The user's cursor is in calc.py on line 10:" in text, text
    assert "10|     return sum(values) / (len(values) + 1)" in text, text


def test_the_cli_takes_the_place_with_at(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.default_reply = Reply("Done.")
    done = agent_lsp(
        "run",
        "--at",
        "calc.py:8-10",
        "look at this",
        "--root",
        str(project),
        env=server_env,
        cwd=project,
    )
    assert "Traceback" not in done.stderr
    text = first_user_message(fake_openai)
    assert f"The user selected this in calc.py, lines 8-10:\n```\n{AVERAGE}\n```" in text, text

    bad = agent_lsp(
        "run", "--at", "calc.py:0", "x", "--root", str(project), env=server_env, cwd=project
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "agent-lsp run: --at calc.py:0: lines count from 1" in bad.stderr
    elsewhere = agent_lsp(
        "run", "--at", "../x.py:3", "x", "--root", str(project), env=server_env, cwd=project
    )
    assert elsewhere.returncode == 2 and "is not in the project" in elsewhere.stderr


def test_a_selection_after_characters_beyond_the_bmp_is_cut_in_utf16_units(
    tmp_path: Path,
) -> None:
    """LSP counts a line's characters in UTF-16 code units (the server offers no other
    position encoding): an emoji before the selection on its line counts two, so the text the
    model is shown is what the user selected, not one character further on."""
    from agent_lsp.loop.prompt import build_messages
    from agent_lsp.project.workspace import Workspace
    from agent_lsp.task import Selection, Task, TaskKind
    from tests.fakes.channel import RecordingChannel

    (tmp_path / "labels.py").write_text('FLAGS = {"🇫🇷": "France", "🎉": "party"}\n')
    line = (tmp_path / "labels.py").read_text().splitlines()[0]
    start = len(line[: line.index('"France"')].encode("utf-16-le")) // 2
    end = start + len('"France"')
    task = Task(
        kind=TaskKind.TASK,
        instruction="rename this",
        path="labels.py",
        selection=Selection(line=0, character=start, end_line=0, end_character=end),
    )
    messages = build_messages(task, Workspace(tmp_path, RecordingChannel()), "profile")
    assert 'The user selected this in labels.py, line 1:\n```\n"France"\n```' in str(
        messages[-1].content
    )
