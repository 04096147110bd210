"""agentLsp.runTests, test failures as diagnostics, run on save — over real LSP, real pytest."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as t

from agent_lsp.config.trust import TrustStore
from tests.adapters.conftest import copy_fixture, link_node_modules
from tests.adapters.conftest import node_modules as node_modules  # the session fixture
from tests.conftest import BUG, FIX
from tests.e2e.editor_client import MESSAGE_WAIT, EditorClient, editor_session
from tests.fakes.openai_server import FakeOpenAIServer


async def until(predicate: Callable[[], bool], timeout: float = MESSAGE_WAIT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def run_tests(client: EditorClient, *args: object) -> object:
    return await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentLsp.runTests", arguments=list(args))
    )


async def test_failures_become_diagnostics_that_offer_a_fix(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    test_uri = (project / "tests" / "test_calc.py").resolve().as_uri()
    async with editor_session("vscode", project, server_env) as client:
        calc_uri = client.open(project / "calc.py")
        assert await run_tests(client) == {"status": "started"}
        await client.wait_for_message("agent-lsp: tests: 1 passed, 1 failed")
        await until(lambda: bool(client.diagnostics.get(test_uri)))
        (diagnostic,) = client.diagnostics[test_uri]
        assert diagnostic.source == "agent-lsp"
        assert diagnostic.severity == t.DiagnosticSeverity.Error
        assert diagnostic.range == t.Range(
            start=t.Position(line=8, character=0), end=t.Position(line=8, character=34)
        )
        assert diagnostic.message.startswith("tests/test_calc.py::test_average: assert 3.0 == 4")

        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=test_uri),
                range=diagnostic.range,
                context=t.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        assert actions is not None
        assert [a.title for a in actions] == [
            "Ask agent to fix: tests/test_calc.py::test_average: assert 3.0 == 4",
            "Ask agent to explain: tests/test_calc.py::test_average: assert 3.0 == 4",
        ]

        # The user fixes the bug in the buffer without saving: the tests see the buffer.
        client.apply(
            t.ApplyWorkspaceEditParams(
                edit=t.WorkspaceEdit(
                    changes={
                        calc_uri: [
                            t.TextEdit(
                                range=t.Range(
                                    start=t.Position(line=9, character=0),
                                    end=t.Position(line=10, character=0),
                                ),
                                new_text=FIX,
                            )
                        ]
                    }
                )
            )
        )
        assert BUG in (project / "calc.py").read_text()
        client.messages.clear()
        assert await run_tests(client) == {"status": "started"}
        await client.wait_for_message("agent-lsp: tests: 2 passed, 0 failed")
        await until(lambda: not client.diagnostics.get(test_uri, [1]), timeout=10)
    assert fake_openai.requests == []  # running tests never calls the model


async def test_run_on_save_follows_the_settings(project: Path, server_env: dict[str, str]) -> None:
    # editor settings sent after start-up may turn tests on only in a trusted workspace
    TrustStore(Path(server_env["HOME"]) / ".config/agent-lsp/trusted.toml").trust(project)
    async with editor_session("neovim", project, server_env) as client:
        uri = client.open(project / "calc.py")
        save = t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
        client.text_document_did_save(save)
        await asyncio.sleep(1.0)
        assert not [m for m in client.messages if "tests:" in m.message]  # off by default
        client.workspace_did_change_configuration(
            t.DidChangeConfigurationParams(settings={"agentLsp": {"tests": {"runOnSave": True}}})
        )
        client.text_document_did_save(save)
        await client.wait_for_message("agent-lsp: tests: 1 passed, 1 failed")


async def test_run_tests_without_a_runner_says_so(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("nothing to test\n")
    async with editor_session("emacs", empty, server_env) as client:
        result = await run_tests(client)
        assert isinstance(result, dict) and result["error"].startswith(
            "agent-lsp: no test runner found"
        )
        shown = await client.wait_for_message("no test runner found")
        assert shown.type == t.MessageType.Warning


async def test_a_run_from_a_source_file_runs_its_tests_and_publishes_them(
    project: Path, server_env: dict[str, str]
) -> None:
    """:AgentTests / C-u M-x agent-lsp-run-tests in calc.py: the tests that import calc.py run,
    their failure shows in the test file; once fixed, the next run clears it."""
    test_uri = (project / "tests" / "test_calc.py").resolve().as_uri()
    async with editor_session("neovim", project, server_env) as client:
        calc_uri = client.open(project / "calc.py")
        assert await run_tests(client, {"uri": calc_uri}) == {"status": "started"}
        shown = await client.wait_for_message("agent-lsp: tests: ")
        assert shown.message.startswith("agent-lsp: tests: 1 passed, 1 failed, 0 errors")
        assert shown.message.endswith(" (tests/test_calc.py, for calc.py)")  # after any hint
        await until(lambda: bool(client.diagnostics.get(test_uri)))
        (diagnostic,) = client.diagnostics[test_uri]
        assert diagnostic.message.startswith("tests/test_calc.py::test_average: assert 3.0 == 4")
        assert diagnostic.range.start.line == 8

        client.apply(
            t.ApplyWorkspaceEditParams(
                edit=t.WorkspaceEdit(
                    changes={
                        calc_uri: [
                            t.TextEdit(
                                range=t.Range(
                                    start=t.Position(line=9, character=0),
                                    end=t.Position(line=10, character=0),
                                ),
                                new_text=FIX,
                            )
                        ]
                    }
                )
            )
        )
        client.messages.clear()
        assert await run_tests(client, {"uri": calc_uri}) == {"status": "started"}
        shown = await client.wait_for_message("agent-lsp: tests: ")
        assert shown.message.startswith("agent-lsp: tests: 2 passed, 0 failed, 0 errors")
        assert shown.message.endswith(" (tests/test_calc.py, for calc.py)")  # after any hint
        await until(lambda: not client.diagnostics.get(test_uri, [1]))


OTHER_TEST = """from calc import add


def test_add_negative() -> None:
    assert add(-2, -3) == -6
"""


async def test_a_targeted_run_leaves_the_tests_it_did_not_run_alone(
    project: Path, server_env: dict[str, str]
) -> None:
    other = project / "tests" / "test_other.py"
    other.write_text(OTHER_TEST)
    test_calc = project / "tests" / "test_calc.py"
    calc_uri, test_uri = (project / "calc.py").as_uri(), test_calc.resolve().as_uri()
    other_uri = other.resolve().as_uri()
    async with editor_session("emacs", project, server_env) as client:
        assert await run_tests(client) == {"status": "started"}
        await client.wait_for_message("agent-lsp: tests: 1 passed, 2 failed")
        await until(lambda: bool(client.diagnostics.get(test_uri)))
        await until(lambda: bool(client.diagnostics.get(other_uri)))
        (other_failure,) = client.diagnostics[other_uri]

        # The test file itself, run after the fix of calc.py (in the buffer, unsaved).
        client.open(project / "calc.py")
        client.buffers[calc_uri] = client.buffers[calc_uri].replace(BUG, FIX)
        client.versions[calc_uri] += 1
        client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(
                    uri=calc_uri, version=client.versions[calc_uri]
                ),
                content_changes=[
                    t.TextDocumentContentChangeWholeDocument(text=client.buffers[calc_uri])
                ],
            )
        )
        client.messages.clear()
        test_buffer = client.open(test_calc)
        assert await run_tests(client, {"uri": test_buffer}) == {"status": "started"}
        shown = await client.wait_for_message("agent-lsp: tests: ")
        assert shown.message.startswith("agent-lsp: tests: 2 passed, 0 failed, 0 errors")
        assert shown.message.endswith(" (tests/test_calc.py)")  # after any hint
        await until(lambda: not client.diagnostics.get(test_uri, [1]))
        assert list(client.diagnostics[other_uri]) == [other_failure]  # not run: still shown


async def test_runs_from_files_of_a_workspace_package_run_that_package(
    tmp_path: Path, server_env: dict[str, str], node_modules: Callable[[str], Path]
) -> None:
    """In a pnpm workspace, runs from a test file and from source files of packages/b run
    packages/b's tests (never another package's suite); its failure shows in its test file."""
    root = copy_fixture("js-workspace", tmp_path / "ws")
    for folder in ("tools", "packages/a"):
        link_node_modules(node_modules("js-jest"), root / folder)
    for folder in ("packages/b", "apps/web/packages/c"):
        link_node_modules(node_modules("js-vitest"), root / folder)
    b = root / "packages" / "b" / "src"
    test_uri = (b / "price.test.js").resolve().as_uri()
    async with editor_session("vscode", root, server_env) as client:
        client.open(b / "price.test.js")
        assert await run_tests(client, {"uri": test_uri}) == {"status": "started"}
        shown = await client.wait_for_message("agent-lsp: tests: ", timeout=180)
        assert shown.message.startswith("agent-lsp: tests: 1 passed, 1 failed, 0 errors")
        assert shown.message.endswith("s (packages/b/src/price.test.js)")
        await until(lambda: bool(client.diagnostics.get(test_uri)))
        (diagnostic,) = client.diagnostics[test_uri]
        assert diagnostic.message.startswith("packages/b/src/price.test.js::")
        assert "counts quantities" in diagnostic.message

        client.messages.clear()
        source_uri = client.open(b / "format.js")  # no test imports it: the package's tests
        assert await run_tests(client, {"uri": source_uri}) == {"status": "started"}
        shown = await client.wait_for_message("agent-lsp: tests: ", timeout=180)
        assert shown.message.startswith("agent-lsp: tests: 1 passed, 1 failed, 0 errors")
        assert shown.message.endswith(
            "s (all tests of packages/b/: none found for packages/b/src/format.js)"
        )
        assert list(client.diagnostics[test_uri]) == [diagnostic]
