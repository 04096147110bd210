"""An untrusted repository, through the real server: its own config and the settings the editor
sends after start-up run nothing by themselves and move nothing (tests on save, linters, the
model endpoint); they may still restrict. Each ignored key is logged once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types as t

from agent_lsp.config.trust import TrustStore
from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.e2e.test_lsp_tests import run_tests, until
from tests.e2e.test_permissions import TOUCH
from tests.e2e.test_workspace import start
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.scripts import fix_average_script, tool_messages

WHY = "until you trust this workspace (agent-lsp trust)"


CANARY = """\
from pathlib import Path


def test_canary():
    for folder in (Path(__file__).resolve().parents[1], Path({outside!r})):
        try:
            (folder / "canary.txt").write_text("ran")
        except OSError:
            pass  # read-only in the sandbox
"""


@pytest.fixture
def env(server_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The server's temporary files (the shadow copy a test run uses) under tmp_path."""
    (tmp_path / "tmp").mkdir()
    return {**server_env, "TMPDIR": str(tmp_path / "tmp")}


def plant_canary(project: Path) -> Path:
    """A test that leaves canary.txt behind wherever the project's tests run (the shadow copy
    under TMPDIR, and outside the workspace where no sandbox stops it); returns the folder to
    look in."""
    (project / "tests" / "test_canary.py").write_text(CANARY.format(outside=str(project.parent)))
    return project.parent


def canaries(where: Path) -> list[Path]:
    return list(where.rglob("canary.txt"))


def save(client: EditorClient, uri: str) -> None:
    client.text_document_did_save(
        t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
    )


async def nothing_ran(client: EditorClient, canary: Path) -> None:
    """No test run happened, nor is one under way: no canary, no test message or diagnostic,
    and a run asked for now is the only one."""
    await asyncio.sleep(3.0)
    assert canaries(canary) == []
    assert not [m for m in client.messages if "tests" in m.message], client.messages
    assert not any(client.diagnostics.values()), client.diagnostics
    assert await run_tests(client) == {"status": "started"}


def logged(client: EditorClient, text: str) -> int:
    return sum(text in m.message for m in client.log_messages)


# An invalid value in the same settings: its warning says the server has applied them.
MARKER = {"maxSteps": 0}


async def applied(client: EditorClient) -> None:
    await until(lambda: logged(client, "invalid settings ignored: maxSteps") > 0)


async def test_a_repository_cannot_run_its_tests_on_save(
    project: Path, env: dict[str, str]
) -> None:
    canary = plant_canary(project)
    (project / ".agent-lsp").mkdir()
    (project / ".agent-lsp/config.toml").write_text(
        "[tests]\nrunOnSave = true\n[lint]\nenabled = true\n"
    )
    async with editor_session("vscode", project, env) as client:
        uri = client.open(project / "calc.py")
        save(client, uri)
        client.workspace_did_change_configuration(  # any change re-reads every source
            t.DidChangeConfigurationParams(settings={"agentLsp": MARKER})
        )
        await applied(client)
        save(client, uri)
        await nothing_ran(client, canary)
        for key in ("tests.runOnSave", "lint.enabled"):
            assert logged(client, f"ignored {key} {WHY}") == 1, client.log_messages


async def test_the_users_own_run_on_save_still_runs_them(
    project: Path, env: dict[str, str]
) -> None:
    """The control: the same canary, with the setting in the user's start-up options."""
    canary = plant_canary(project)
    options = {"tests": {"runOnSave": True}}
    async with editor_session("vscode", project, env, options) as client:
        save(client, client.open(project / "calc.py"))
        await client.wait_for_message("agent-lsp: tests: 2 passed, 1 failed")
        assert canaries(canary) and all(c.read_text() == "ran" for c in canaries(canary))


async def test_settings_sent_after_start_up_may_restrict_but_not_widen(
    project: Path, fake_openai: FakeOpenAIServer, env: dict[str, str]
) -> None:
    canary = plant_canary(project)
    async with editor_session("neovim", project, env) as client:
        uri = client.open(project / "calc.py")
        wider = {"tests": {"runOnSave": True}, "permissionLevel": "L3", **MARKER}
        client.workspace_did_change_configuration(
            t.DidChangeConfigurationParams(settings={"agentLsp": wider})
        )
        await applied(client)
        save(client, uri)
        await nothing_ran(client, canary)
        for key in ("tests.runOnSave", "permissionLevel"):
            assert logged(client, f"ignored {key} {WHY}") == 1, client.log_messages
        # Restricting still works: at L0 a command is refused without asking anyone.
        await client.wait_for_message("agent-lsp: tests:")  # the run nothing_ran started
        client.workspace_did_change_configuration(
            t.DidChangeConfigurationParams(settings={"agentLsp": {"permissionLevel": "L0"}})
        )
        fake_openai.script(TOUCH, Reply("Could not touch it."))
        client.answers = ["Allow once"]
        await ask_agent_to_fix(client, uri)
        await until(lambda: len(fake_openai.requests) == 2)
        assert "not run: policy: denied (level L0" in tool_messages(fake_openai.requests[1])[0]
        assert client.questions == [] and not (project / "made.txt").exists()


async def test_settings_pulled_after_start_up_cannot_widen(
    project: Path, env: dict[str, str]
) -> None:
    canary = plant_canary(project)
    client = await start(env, [project], config={"tests": {"runOnSave": True}, **MARKER})
    try:
        await applied(client)  # the server pulls the settings after `initialized`
        save(client, client.open(project / "calc.py"))
        await nothing_ran(client, canary)
        assert logged(client, f"ignored tests.runOnSave {WHY}") == 1, client.log_messages
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_the_editor_cannot_move_the_endpoint_later_until_trusted(
    project: Path, fake_openai: FakeOpenAIServer, env: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "AGENT_LSP_BASE_URL"}
    options = {"model": {"baseUrl": fake_openai.base_url}}
    with FakeOpenAIServer() as collector:
        for trusted in (False, True):
            if trusted:
                TrustStore(tmp_path / "home/.config/agent-lsp/trusted.toml").trust(project)
            fake_openai.script(*fix_average_script())
            collector.script(*fix_average_script())
            async with editor_session("vscode", project, env, options) as client:
                client.workspace_did_change_configuration(
                    t.DidChangeConfigurationParams(
                        settings={"agentLsp": {"model": {"baseUrl": collector.base_url}}}
                    )
                )
                await asyncio.sleep(0.5)
                await ask_agent_to_fix(client, client.open(project / "calc.py"))
                await client.wait_for_message("agent-lsp: completed")
            if not trusted:
                assert collector.requests == [] and fake_openai.requests
            else:
                assert collector.requests  # trusted: the editor's later settings apply
