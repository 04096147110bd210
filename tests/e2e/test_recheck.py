"""Done means done: a fix's diagnostic is asked again of its source — agent-lsp's own test run,
the wrapped server in proxy mode (pylsp's fresh publishDiagnostics, ruff's pull diagnostics) —
and the editor's outcome message says what was checked. A real LSP client, real pytest, real
pylsp and ruff, the scripted model."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types as t

from tests.conftest import BUG, FIX
from tests.e2e.editor_client import EditorClient, editor_session
from tests.e2e.test_lsp_tests import run_tests, until
from tests.e2e.test_proxy import BROKEN, pyflakes_diagnostics, wrapped
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import outcome

SKIP = "def test_average() -> None:"
SKIPPED = "import pytest\n\n\n@pytest.mark.skip\ndef test_average() -> None:"
UNDEFINED = "diagnostic 'undefined name 'valeus'' at stats.py:5"


def edit(path: str, old: str, new: str) -> Reply:
    return Reply(
        tool_calls=[ToolCall("edit_file", {"path": path, "old_text": old, "new_text": new})]
    )


def last_message(fake_openai: FakeOpenAIServer, request: int) -> str:
    return str(fake_openai.requests[request]["messages"][-1]["content"])


async def fix(client: EditorClient, uri: str, diagnostic: t.Diagnostic) -> None:
    result = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentLsp.fix", arguments=[uri, diagnostic])
    )
    assert isinstance(result, dict) and "taskId" in result


async def test_a_remaining_test_diagnostic_is_told_and_the_agent_goes_on(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """The model skips the failing test (the suite passes): told the test it was asked to fix
    still fails, it goes on, fixes the code; the outcome names the re-run that proved it."""
    test_file = (project / "tests" / "test_calc.py").resolve()
    fake_openai.script(
        edit("tests/test_calc.py", SKIP, SKIPPED),
        Reply("Done: the test passes now."),
        edit("tests/test_calc.py", SKIPPED, SKIP),
        edit("calc.py", BUG, FIX),
        Reply("Fixed average()."),
    )
    async with editor_session("vscode", project, server_env) as client:
        client.open((project / "calc.py").resolve())
        test_uri = client.open(test_file)
        assert await run_tests(client) == {"status": "started"}
        await until(lambda: bool(client.diagnostics.get(test_uri)))
        (diagnostic,) = client.diagnostics[test_uri]
        assert diagnostic.message.startswith("tests/test_calc.py::test_average: assert 3.0 == 4")
        first = diagnostic.message.splitlines()[0]
        await fix(client, test_uri, diagnostic)
        done = await client.wait_for_message("agent-lsp: completed")

    what = f"diagnostic '{first}' at tests/test_calc.py:9"
    expected = (
        "agent-lsp: completed: Fixed average(). (changed: tests/test_calc.py, calc.py) — "
        f"{what} gone (tests/test_calc.py::test_average passed)"
    )
    assert re.fullmatch(outcome(expected), done.message), done.message
    told = last_message(fake_openai, 2)
    assert told.startswith(
        "The task is not done: The tests pass, but the problem you were asked to fix is still "
        f"reported: {what} still there (tests/test_calc.py::test_average: 0 passed, 0 failed, "
        "0 errors, 1 skipped"
    )
    assert len(fake_openai.requests) == 5


def stats_module(tmp_path: Path, text: str = BROKEN) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "stats.py").write_text(text)
    return root


async def test_proxy_fixed_diagnostic_is_gone_as_pylsp_says(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    module = stats_module(tmp_path)
    fake_openai.script(
        edit("stats.py", "sum(valeus)", "sum(values)"),
        Reply("Fixed the typo."),
    )
    async with editor_session("emacs", module, server_env, command=wrapped()) as client:
        uri = client.open(module / "stats.py")
        undefined = next(
            d for d in await pyflakes_diagnostics(client, uri) if "valeus" in d.message
        )
        await fix(client, uri, undefined)
        done = await client.wait_for_message("agent-lsp: completed")
    expected = (
        "agent-lsp: completed: unverified: no test runner found, so nothing checked the "
        "result; the model says: Fixed the typo. (changed: stats.py) — "
        f"{UNDEFINED} gone (re-checked by pylsp)"
    )
    assert re.fullmatch(outcome(expected), done.message), done.message


async def test_proxy_remaining_diagnostic_is_present_and_the_task_fails(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """The model fixes the other diagnostic (the unused import: lines move up by one) and
    insists: pylsp still reports the undefined name, now on line 4."""
    module = stats_module(tmp_path)
    fake_openai.script(
        edit("stats.py", "import os\n", ""),
        Reply("Fixed."),
        Reply("It is fixed."),
    )
    async with editor_session("neovim", module, server_env, command=wrapped()) as client:
        uri = client.open(module / "stats.py")
        undefined = next(
            d for d in await pyflakes_diagnostics(client, uri) if "valeus" in d.message
        )
        await fix(client, uri, undefined)
        done = await client.wait_for_message("agent-lsp: failed")
        assert client.buffers[uri] == BROKEN.replace("import os\n", "")
    still = f"{UNDEFINED} still there (pylsp reports it at line 4)"
    expected = (
        f"agent-lsp: failed: not fixed: {still}; the model says: It is fixed. (changed: stats.py)"
    )
    assert re.fullmatch(outcome(expected), done.message), done.message
    assert last_message(fake_openai, 2).startswith(
        f"The task is not done: the problem you were asked to fix is still reported: {still}."
    )
    assert len(fake_openai.requests) == 3


async def test_proxy_tests_pass_but_pylsp_still_reports_it_then_it_is_fixed(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    calc = project / "calc.py"
    calc.write_text("import os\n" + calc.read_text())
    fake_openai.script(
        edit("calc.py", BUG, FIX),
        Reply("Done."),
        edit("calc.py", "import os\n", ""),
        Reply("Removed the import."),
    )
    async with editor_session("vscode", project, server_env, command=wrapped()) as client:
        uri = client.open(calc)
        (unused,) = [d for d in await pyflakes_diagnostics(client, uri) if "os" in d.message]
        await fix(client, uri, unused)
        done = await client.wait_for_message("agent-lsp: completed")
    what = "diagnostic ''os' imported but unused' at calc.py:1"
    expected = (
        f"agent-lsp: completed: Removed the import. (changed: calc.py) — {what} gone "
        "(re-checked by pylsp)"
    )
    assert re.fullmatch(outcome(expected), done.message), done.message
    assert last_message(fake_openai, 2).startswith(
        "The task is not done: The tests pass, but the problem you were asked to fix is still "
        f"reported: {what} still there (pylsp reports it at line 1)."
    )


async def test_proxy_a_diagnostic_the_wrapped_server_did_not_report_is_unchecked(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """Another server of the editor's (mypy here) reported it: nobody here can ask it."""
    module = stats_module(tmp_path)
    fake_openai.script(edit("stats.py", "sum(valeus)", "sum(values)"), Reply("Fixed."))
    async with editor_session("emacs", module, server_env, command=wrapped()) as client:
        uri = client.open(module / "stats.py")
        await pyflakes_diagnostics(client, uri)
        other = t.Diagnostic(
            range=t.Range(start=t.Position(line=4, character=15), end=t.Position(4, 21)),
            message='Name "valeus" is not defined',
            source="mypy",
            code="name-defined",
        )
        await fix(client, uri, other)
        done = await client.wait_for_message("agent-lsp: completed")
    expected = (
        "agent-lsp: completed: unverified: no test runner found, so nothing checked the "
        'result; the model says: Fixed. (changed: stats.py) — diagnostic \'Name "valeus" is '
        "not defined' at stats.py:5 could not be re-checked (mypy cannot be asked)"
    )
    assert re.fullmatch(outcome(expected), done.message), done.message


def ruff() -> str:
    path = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if path is None:
        pytest.fail("ruff is a dev dependency: pip install -e '.[dev]'")
    return path


async def test_proxy_pull_diagnostics_are_asked_of_ruff_server(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """ruff server offers pull diagnostics: the re-check is a textDocument/diagnostic
    request of the proxy's own (its answer never reaches the editor)."""
    module = stats_module(tmp_path)
    command = [sys.executable, "-m", "agent_lsp", "serve", "--wrap", "--", ruff(), "server"]
    fake_openai.script(
        edit("stats.py", "sum(valeus)", "sum(values)"),
        Reply("Fixed the typo."),
    )
    async with editor_session("vscode", module, server_env, command=command) as client:
        result = client.initialize_result
        assert result is not None and result.capabilities.diagnostic_provider is not None
        uri = client.open(module / "stats.py")
        report = await client.text_document_diagnostic_async(
            t.DocumentDiagnosticParams(text_document=t.TextDocumentIdentifier(uri=uri))
        )
        assert isinstance(report, t.RelatedFullDocumentDiagnosticReport)
        undefined = next(d for d in report.items if d.code == "F821")
        assert undefined.source == "Ruff"
        await fix(client, uri, undefined)
        done = await client.wait_for_message("agent-lsp: completed")
    expected = (
        "agent-lsp: completed: unverified: no test runner found, so nothing checked the "
        "result; the model says: Fixed the typo. (changed: stats.py) — diagnostic "
        f"'{undefined.message}' at stats.py:5 gone (re-checked by ruff)"
    )
    assert re.fullmatch(outcome(expected), done.message), done.message
