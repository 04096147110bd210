"""The editor's wait at the start of a task: a command sent while the agent is still loading
(an editor that asks at once, a loaded machine) is answered at once with the task's id, the task
starts when the agent is there, and everything the editor sends meanwhile is answered at once.
The agent's import is held by the test (an import hook waiting for a file), so the order is
certain, whatever the machine."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from lsprotocol import types as t

from tests.conftest import FIX
from tests.e2e.editor_client import REQUEST_WAIT, EditorClient, editor_session
from tests.e2e.test_lsp_fix import DIAGNOSTIC
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import fix_average_script

# Started by the server's interpreter (PYTHONPATH): the import of the agent's state waits
# until the gate file exists, as a slow import would, holding the module's import lock.
HOOK = """\
import os
import sys
import time


class _Gate:
    def find_spec(self, name, path=None, target=None):
        gate = os.environ.get("FIRST_ANSWER_GATE")
        if name == "agent_lsp.lsp.state" and gate:
            while not os.path.exists(gate):
                time.sleep(0.01)
        return None


sys.meta_path.insert(0, _Gate())
"""


async def test_a_fix_asked_while_the_agent_loads_holds_up_nothing_else(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.script(*fix_average_script())
    hook, gate = tmp_path / "hook", tmp_path / "gate"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    env = {
        **server_env,
        "PYTHONPATH": os.pathsep.join(
            [str(hook), *server_env.get("PYTHONPATH", "").split(os.pathsep)]
        ).rstrip(os.pathsep),
        "FIRST_ANSWER_GATE": str(gate),
    }
    async with editor_session("vscode", project, env) as client:
        try:
            await _fix_while_loading(client, project / "calc.py", gate)
        finally:
            with contextlib.suppress(OSError):
                gate.touch()  # a server stuck on the gate can shut down


async def _fix_while_loading(client: EditorClient, calc: Path, gate: Path) -> None:
    uri = client.open(calc)
    command = t.ExecuteCommandParams(command="agentLsp.fix", arguments=[uri, DIAGNOSTIC])
    fix = asyncio.ensure_future(client.workspace_execute_command_async(command))
    asked = t.CodeActionParams(
        text_document=t.TextDocumentIdentifier(uri=uri),
        range=DIAGNOSTIC.range,
        context=t.CodeActionContext(diagnostics=[DIAGNOSTIC]),
    )
    # The command and a codeAction sent after it are both answered while the agent's import
    # is held (before, the command's handler waited for that import on the server's loop,
    # and everything behind it with it): the task's id at once, the task when the agent is in.
    actions = await asyncio.wait_for(client.text_document_code_action_async(asked), REQUEST_WAIT)
    started = await asyncio.wait_for(fix, REQUEST_WAIT)
    assert not gate.exists()
    assert isinstance(started, dict) and set(started) == {"taskId"}
    titles = [a.title for a in actions or []]
    assert "Ask agent to fix: " + DIAGNOSTIC.message in titles
    gate.touch()  # the import finishes: the task starts
    await client.wait_for_message("agent-lsp: completed")
    assert client.buffers[uri].count(FIX) == 1  # the fix, in the editor's buffer
    # The id answered before the agent loaded is the task's (its progress token names it).
    prefix = f"agent-lsp/{started['taskId']}/"
    assert any(str(token).startswith(prefix) for token in client.progress_reports)
