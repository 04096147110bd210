"""Proxy mode: agent-lsp wraps a real language server (pylsp with pyflakes)."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types as t

from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.test_lsp_tests import until
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import TOTALS

BROKEN = "import os\n\n\ndef total(values):\n    return sum(valeus)\n"
FIXED = "import os\n\n\ndef total(values):\n    return sum(values)\n"


def pylsp() -> str:
    path = shutil.which("pylsp", path=str(Path(sys.executable).parent))
    if path is None:
        pytest.fail("pylsp is a dev dependency: pip install -e '.[dev]'")
    return path


def wrapped() -> list[str]:
    return [sys.executable, "-m", "agent_lsp", "serve", "--wrap", "--", pylsp()]


@pytest.fixture
def module(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "stats.py").write_text(BROKEN)
    return root


async def pyflakes_diagnostics(client: EditorClient, uri: str) -> list[t.Diagnostic]:
    await until(lambda: any(d.source == "pyflakes" for d in client.diagnostics.get(uri, [])))
    return [d for d in client.diagnostics[uri] if d.source == "pyflakes"]


async def test_the_real_servers_answers_pass_through_with_the_agent_added(
    module: Path, server_env: dict[str, str]
) -> None:
    async with editor_session("neovim", module, server_env, command=wrapped()) as client:
        result = client.initialize_result
        assert result is not None and result.server_info is not None
        assert result.server_info.name == "pylsp"  # the editor talks to pylsp...
        caps = result.capabilities
        assert caps.hover_provider and caps.completion_provider  # ...with all its features
        assert caps.execute_command_provider is not None
        assert {"agentLsp.fix", "agentLsp.runTask"} <= set(caps.execute_command_provider.commands)

        uri = client.open(module / "stats.py")
        (unused, undefined) = sorted(
            await pyflakes_diagnostics(client, uri), key=lambda d: d.message
        )
        assert undefined.message == "undefined name 'valeus'"
        assert unused.message == "'os' imported but unused"

        hover = await client.text_document_hover_async(
            t.HoverParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                position=t.Position(line=4, character=12),
            )
        )
        assert hover is not None and "sum" in str(hover.contents)

        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=undefined.range,
                context=t.CodeActionContext(diagnostics=[undefined]),
            )
        )
        assert actions is not None
        assert "Ask agent to fix: undefined name 'valeus'" in [a.title for a in actions]


async def test_fix_through_the_proxy(
    module: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("get_diagnostics", {"path": "stats.py"})]),
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
    async with editor_session("emacs", module, server_env, command=wrapped()) as client:
        uri = client.open(module / "stats.py")
        diagnostics = await pyflakes_diagnostics(client, uri)
        undefined = next(d for d in diagnostics if "valeus" in d.message)
        result = await client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="agentLsp.fix", arguments=[uri, undefined])
        )
        assert isinstance(result, dict) and "taskId" in result
        done = await client.wait_for_message("agent-lsp: completed")
        unverified = (  # the module has no tests: said so
            "agent-lsp: completed: unverified: no test runner found, so nothing checked the "
            "result; the model says: Fixed the typo. (changed: stats.py) — diagnostic "
            "'undefined name 'valeus'' at stats.py:5 gone (re-checked by pylsp)"
        )
        assert re.fullmatch(re.escape(unverified) + TOTALS, done.message), done.message
        assert client.buffers[uri] == FIXED
        assert (module / "stats.py").read_text() == BROKEN  # unsaved, in the editor
        # The agent perceived pylsp's diagnostics through the proxy.
        seen = fake_openai.requests[1]["messages"][-1]["content"]
        assert "stats.py:5: [pyflakes] undefined name 'valeus'" in seen
        assert "stats.py:1: [pyflakes] 'os' imported but unused" in seen
        # pylsp saw the edit too: its diagnostics for the typo went away.
        await until(lambda: not any("valeus" in d.message for d in client.diagnostics[uri]))
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        (
            "missing-server",
            "agent-lsp: the language server to wrap, missing-server, is not on PATH: install "
            "it, or give its full path after --wrap --",
        ),
        (
            "pylsp",
            "agent-lsp: the language server to wrap, pylsp, is not on PATH: install it (pip "
            "install python-lsp-server), or give its full path after --wrap --",
        ),
    ],
)
async def test_a_missing_wrapped_server_is_one_clear_line(
    tmp_path: Path, server_env: dict[str, str], program: str, expected: str
) -> None:
    env = {**server_env, "PATH": str(tmp_path / "empty-bin")}  # nothing on PATH
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent_lsp",
        "serve",
        "--wrap",
        "--",
        program,
        stdin=asyncio.subprocess.PIPE,  # an editor's pipes, as Eglot starts it
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 2
    assert out == b""
    assert err.decode().splitlines() == [expected]
