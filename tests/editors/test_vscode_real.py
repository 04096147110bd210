"""The VS Code extension in a real VS Code: code-server on 127.0.0.1, the extension installed
from the .vsix the build tests make, driven from headless Chromium as a user drives it.

The entry is agent-lsp's own test diagnostics (agent-lsp: Run tests): the Python extension is
not installable offline. The model is the scripted fake (tests/fakes/openai_server.py). Every
test asserts what the editor shows (notifications, palette entries, quick fixes, the editor's
text and dirty marker) and what is on disk. Screenshots are kept as artifacts: their folder is
printed, and copied to $AGENT_LSP_ARTIFACTS when that is set.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.demo import copy_sample
from tests.conftest import BUG, FIX
from tests.editors.codeserver import (
    CodeServer,
    Workbench,
    browser,
    find_chromium,
    find_code_server,
    poll,
)
from tests.editors.test_vscode import build_extension
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall
from tests.scripts import SUMMARY, fix_average_script, outcome

pytestmark = [pytest.mark.editor, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
PALETTE = {
    "agent-lsp: Run task…",
    "agent-lsp: Run tests",
    "agent-lsp: Cancel task",
    "agent-lsp: Show log",
    "agent-lsp: Remember…",
}
# The server from this checkout, named in the User settings (as the README shows).
FROM_CHECKOUT = {
    "agentLsp.server.path": sys.executable,
    "agentLsp.server.args": ["-m", "agent_lsp", "serve"],
}
QUIET = {"agentLsp.memory.distill": False, "agentLsp.model.maxRetries": 0}
FAILED = r"^agent-lsp: tests: 1 passed, 1 failed"
COMPLETED = f"agent-lsp: completed: {SUMMARY} (changed: calc.py)"


@pytest.fixture(scope="module")
def code_server() -> str:
    return find_code_server()


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


@pytest.fixture(scope="module")
def extensions(code_server: str, chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An extensions folder with the extension installed from its .vsix (`code-server
    --install-extension`, as a user installs it)."""
    del chromium  # checked before the (slow) build
    (vsix,) = build_extension(tmp_path_factory).glob("*.vsix")
    folder = tmp_path_factory.mktemp("code-server-install")
    installer = CodeServer(code_server, folder, os.environ)
    installer.install_extension(vsix)
    return installer.extensions


@pytest.fixture(scope="module")
def artifacts(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("vscode-screenshots")
    capture: Any = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print(f"\nVS Code screenshots: {folder}")
    yield folder
    target = os.environ.get("AGENT_LSP_ARTIFACTS")
    if target:
        shutil.copytree(folder, Path(target) / "vscode", dirs_exist_ok=True)


class Session:
    """code-server on one project with the given User settings, and a browser page on it."""

    def __init__(self, server: CodeServer, bench: Workbench, project: Path) -> None:
        self.server = server
        self.bench = bench
        self.project = project


@pytest.fixture
def open_vscode(
    code_server: str,
    chromium: str,
    extensions: Path,
    artifacts: Path,
    server_env: dict[str, str],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> Iterator[Any]:
    """open_vscode(settings, env=...) -> a Session; everything is stopped after the test."""
    started: list[tuple[CodeServer, Any, Any]] = []
    shots = artifacts / request.node.name
    shots.mkdir()

    def start(settings: dict[str, Any], env: dict[str, str] | None = None) -> Session:
        project = copy_sample(tmp_path / "calc")
        root = tmp_path / "code-server"
        server_environment = dict(env if env is not None else server_env)
        # The server under test is this checkout, whatever the cwd.
        server_environment["PYTHONPATH"] = str(ROOT)
        server = CodeServer(code_server, root, server_environment)
        shutil.rmtree(server.extensions)
        server.extensions = extensions
        server.write_settings(settings)
        server.start()
        context = browser(chromium, tmp_path / "chromium-profile")
        pages = context.__enter__()
        started.append((server, context, pages))
        page = pages.pages[0] if pages.pages else pages.new_page()
        page.set_default_timeout(60_000)
        bench = Workbench(page, shots)
        bench.open_folder(server.url, project)
        return Session(server, bench, project)

    yield start
    for server, context, pages in started:
        try:  # the browser first, then the editor it talks to
            for page in pages.pages:
                page.screenshot(path=str(shots / "last.png"))
            context.__exit__(None, None, None)
        finally:
            server.stop()
            (shots / "code-server.log").write_text(server.output(), encoding="utf-8")


def _wait_for_server(bench: Workbench) -> None:
    """The extension is active and its server started: the status bar shows the agent idle."""
    poll(
        "the agent in the status bar",
        lambda: (
            bench.page.locator(
                "#status\\.agentLsp\\.agent-lsp, .statusbar-item",
                has_text=re.compile(r"^\s*agent$"),
            ).count()
            > 0
        ),
        timeout=180,
    )


def _run_tests_until_failure(bench: Workbench) -> None:
    bench.run_command("agent-lsp: Run tests")
    bench.wait_notification(r"^agent-lsp: running the tests")
    bench.wait_notification(FAILED, timeout=240)


def test_palette_quick_fix_leaves_the_fix_unsaved_in_the_buffer(
    open_vscode: Any, fake_openai: FakeOpenAIServer
) -> None:
    """The documented first contact: agent-lsp: Run tests -> the failing test's problem ->
    quick fix "Ask agent to fix" -> the fix is in calc.py's buffer, unsaved, without any
    preview, and the outcome is a message. The server is named in the User settings."""
    fake_openai.script(*fix_average_script())
    session = open_vscode({**FROM_CHECKOUT, **QUIET})
    bench, project = session.bench, session.project
    calc = project / "calc.py"
    before = calc.read_bytes()

    # The palette lists the commands under the product's name.
    bench.open_file("test_calc.py")
    _wait_for_server(bench)
    entries = bench.palette_entries("agent-lsp:")
    bench.screenshot("palette")
    assert set(entries) >= PALETTE, entries
    assert not [e for e in bench.palette_entries("Agent:") if e.startswith("Agent:")]

    _run_tests_until_failure(bench)
    bench.screenshot("test-failure")
    bench.clear_notifications()
    bench.open_file("test_calc.py")
    fixes = bench.quick_fixes_at_next_problem(r"^Ask agent to fix: ")
    bench.screenshot("quick-fixes")
    assert any(re.match(r"^Ask agent to fix: .*assert", f) for f in fixes), fixes
    bench.choose_quick_fix(r"^Ask agent to fix: ")

    # The failed test's diagnostic is agent-lsp's own: the test was re-run on the fix, passed.
    bench.wait_notification(outcome(COMPLETED, recheck="gone"), timeout=300)
    bench.screenshot("completed")
    # The edit went in directly: no Refactor Preview to tick and apply.
    assert "Refactor Preview" not in bench.body_text()
    assert not bench.page.locator(".refactor-preview, .bulk-edit-panel").count()
    # On disk nothing changed; the editor holds the fix, unsaved.
    assert calc.read_bytes() == before
    bench.open_file("calc.py")
    text = poll("the fixed text in calc.py's editor", lambda: FIX.strip() in bench.editor_text())
    assert text
    assert bench.editor_text() == before.decode().replace(BUG, FIX)
    assert bench.tab_is_dirty("calc.py")
    bench.screenshot("unsaved-fix")
    # What the model was asked: the test failure, from the quick fix.
    first = fake_openai.requests[0]["messages"]
    asked = " ".join(str(m.get("content")) for m in first if m.get("role") == "user")
    assert "test_average" in asked, asked
    assert len(fake_openai.requests) == 4


def test_progress_notification_cancel_stops_the_task(
    open_vscode: Any, fake_openai: FakeOpenAIServer
) -> None:
    """agent-lsp: Run task… asks for the task; while it runs, a notification shows the
    progress with a Cancel button, and Cancel stops the task."""
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        Hang(900),  # the model "thinks" until cancelled
        Reply("never reached"),
    )
    session = open_vscode({**FROM_CHECKOUT, **QUIET})
    bench = session.bench
    bench.open_file("calc.py")
    _wait_for_server(bench)

    bench.run_command("agent-lsp: Run task…")
    title = bench.page.locator(".quick-input-widget .quick-input-title")
    poll("the task input box", lambda: title.inner_text().strip() == "agent-lsp: Run task")
    bench.type_into_input("make the failing test pass")
    bench.wait_notification(r"^agent-lsp: task \w+ started \(agent-lsp: Cancel task stops it\)")
    fake_openai.wait_for_requests(2, timeout=120)

    progress = bench.page.locator(".notification-list-item").filter(
        has=bench.page.locator(".notification-list-item-buttons-container", has_text="Cancel")
    )
    poll("the progress notification with Cancel", lambda: progress.count() == 1, timeout=120)
    assert "agent-lsp" in progress.inner_text()
    bench.screenshot("progress-with-cancel")
    progress.locator(".monaco-button", has_text="Cancel").click()

    bench.wait_notification(r"^agent-lsp: cancelled", timeout=120)
    bench.screenshot("cancelled")
    poll("the progress notification to close", lambda: progress.count() == 0, timeout=60)
    assert len(fake_openai.requests) == 2  # nothing after the cancel


def test_review_mode_apply_and_reject_with_the_server_found_off_path(
    open_vscode: Any, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """applyMode "review" (a User setting): each fix is a proposal on its lines; Reject drops
    it, Apply puts it in the buffer, unsaved. agentLsp.server.path is left at its default and
    agent-lsp is not on the editor's PATH: it is found in ~/.local/bin, where `uv tool` and
    `pipx` install it."""
    home = Path(server_env["HOME"])
    installed = home / ".local" / "bin" / "agent-lsp"
    installed.parent.mkdir(parents=True)
    installed.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agent_lsp "$@"\n')
    installed.chmod(0o755)
    env = dict(server_env, PATH="/usr/bin:/bin")
    fake_openai.script(*fix_average_script(), *fix_average_script())
    session = open_vscode({"agentLsp.applyMode": "review", **QUIET}, env)
    bench, project = session.bench, session.project
    calc = project / "calc.py"
    before = calc.read_bytes()
    proposed = f"agent-lsp: completed: {SUMMARY} (proposed: calc.py; review on the marked lines)"

    bench.open_file("test_calc.py")
    _wait_for_server(bench)

    def propose(name: str) -> list[str]:
        bench.open_file("test_calc.py")
        _run_tests_until_failure(bench)  # the failure to fix, from the buffers as they are
        bench.clear_notifications()
        bench.open_file("test_calc.py")
        bench.quick_fixes_at_next_problem(r"^Ask agent to fix: ")
        bench.choose_quick_fix(r"^Ask agent to fix: ")
        # The failed test is agent-lsp's own: it was re-run on the proposed text and passed
        # (the proposal is what the agent tested; the buffers do not hold it yet).
        bench.wait_notification(outcome(proposed, recheck="gone"), timeout=300)
        bench.open_file("calc.py")
        fixes = bench.quick_fixes_at_next_problem(r"^Apply agent change$")
        bench.screenshot(name)
        return fixes

    # Reject: the proposal goes, the buffer and the file stay as they were.
    fixes = propose("proposal")
    assert {"Apply agent change", "Show diff of agent change", "Reject agent change"} <= set(
        fixes
    ), fixes
    bench.choose_quick_fix(r"^Reject agent change$")
    poll(
        "the proposal to go from the problems",
        lambda: "agent proposes a change" not in _problems(bench),
        timeout=120,
    )
    assert bench.editor_text() == before.decode()
    assert not bench.tab_is_dirty("calc.py")
    bench.screenshot("rejected")

    # Apply: the fix is in the buffer, unsaved; the disk is untouched.
    propose("proposal-again")
    bench.choose_quick_fix(r"^Apply agent change$")
    poll("the applied fix in the editor", lambda: FIX.strip() in bench.editor_text())
    assert bench.editor_text() == before.decode().replace(BUG, FIX)
    assert bench.tab_is_dirty("calc.py")
    assert calc.read_bytes() == before
    assert "Refactor Preview" not in bench.body_text()
    bench.screenshot("applied")
    assert len(fake_openai.requests) == 8


def _problems(bench: Workbench) -> str:
    """The Problems view's text (opened for the check)."""
    bench.run_command("View: Focus Problems (Errors, Warnings, Infos)")
    view = bench.page.locator(".markers-panel")
    view.first.wait_for(state="visible", timeout=30_000)
    return view.first.inner_text()
