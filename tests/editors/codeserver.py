"""A real VS Code for tests: npm's code-server on 127.0.0.1, driven from headless Chromium with
Playwright (the system's Chromium, never a downloaded browser).

`CodeServer` owns one code-server process with a private user-data and extensions folder;
`Workbench` is one browser page on it, with what a user does (the command palette, quick open,
quick fixes, notifications) and reads (the editor's text, the dirty marker, the problems).
Every wait polls the page: the machine may be slow, the outcome must not depend on timing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import pytest

from tests.conftest import which_or_skip

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A quiet, deterministic workbench: nothing saves by itself (the agent's edits must stay
# unsaved), no welcome page, tips, surveys, AI side panels or update checks.
BASE_SETTINGS: dict[str, Any] = {
    "files.autoSave": "off",
    "files.hotExit": "off",
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "workbench.editor.enablePreview": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "chat.disableAIFeatures": True,
    "chat.commandCenter.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "update.mode": "none",
    "security.workspace.trust.enabled": False,
    "git.enabled": False,
    "editor.minimap.enabled": False,
    "editor.lightbulb.enabled": "off",
    "editor.hover.enabled": False,
    "window.commandCenter": False,
}


def find_code_server() -> str:
    """$AGENT_LSP_CODE_SERVER (what .ci/install-vscode prints), else `code-server` on PATH;
    missing: skipped, or failed in CI."""
    given = os.environ.get("AGENT_LSP_CODE_SERVER")
    if given:
        if not os.access(given, os.X_OK):
            pytest.fail(f"AGENT_LSP_CODE_SERVER={given} is not an executable")
        return given
    return which_or_skip("code-server")


def find_chromium() -> str:
    given = os.environ.get("AGENT_LSP_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return which_or_skip("chromium")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def poll(what: str, check: Callable[[], Any], timeout: float = 120.0, every: float = 0.25) -> Any:
    """`check()`'s first truthy value; an AssertionError naming `what` after `timeout`."""
    until = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > until:
            raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
        time.sleep(every)


class CodeServer:
    """One code-server with its own user-data and extensions folders under `root`."""

    def __init__(self, binary: str, root: Path, env: Mapping[str, str]) -> None:
        self.binary = binary
        self.root = root
        self.user_data = root / "user-data"
        self.extensions = root / "extensions"
        self.env = dict(env)
        self.log = root / "code-server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.user_data.mkdir(parents=True, exist_ok=True)
        self.extensions.mkdir(parents=True, exist_ok=True)

    def _args(self) -> list[str]:
        return [
            self.binary,
            "--auth",
            "none",
            "--user-data-dir",
            str(self.user_data),
            "--extensions-dir",
            str(self.extensions),
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            "--disable-getting-started-override",
        ]

    def install_extension(self, vsix: Path) -> None:
        proc = subprocess.run(
            [*self._args(), "--install-extension", str(vsix)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, f"installing {vsix.name} failed:\n{output}"
        assert list(self.extensions.glob("agent-lsp.agent-lsp-*")), output

    @property
    def settings_file(self) -> Path:
        return self.user_data / "User" / "settings.json"

    def write_settings(self, settings: Mapping[str, Any]) -> None:
        """The User settings (what a user edits in Preferences: Open User Settings (JSON))."""
        self.settings_file.parent.mkdir(parents=True, exist_ok=True)
        self.settings_file.write_text(
            json.dumps({**BASE_SETTINGS, **settings}, indent=2), encoding="utf-8"
        )

    def start(self) -> str:
        self.port = _free_port()
        log = self.log.open("ab")
        self.proc = subprocess.Popen(
            [*self._args(), "--bind-addr", f"127.0.0.1:{self.port}"],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        poll("code-server to listen", self._healthy, timeout=180, every=0.5)
        return self.url

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _healthy(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"code-server exited {self.proc.returncode}:\n{self.output()}")
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    def output(self) -> str:
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-20000:]
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:  # its own process group: the extension host and agent-lsp go with it
            os.killpg(proc.pid, 15)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=30)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Workbench:
    """A browser page showing VS Code on one folder; screenshots go to `artifacts`."""

    def __init__(self, page: Any, artifacts: Path) -> None:
        self.page = page
        self.artifacts = artifacts
        self.shots = 0

    # ------------------------------------------------------------------ looking

    def screenshot(self, name: str) -> Path:
        self.shots += 1
        path = self.artifacts / f"{self.shots:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        return path

    def open_folder(self, url: str, folder: Path) -> None:
        self.page.goto(f"{url}/?folder={folder}", wait_until="domcontentloaded", timeout=180_000)
        self.wait_ready()

    def wait_ready(self) -> None:
        self.page.wait_for_selector(".monaco-workbench", timeout=180_000)
        self.page.wait_for_selector(".explorer-folders-view, .explorer-viewlet", timeout=180_000)

    def notifications(self) -> list[str]:
        """The text of every notification toast shown now (or kept in the notification centre
        when it is open)."""
        texts = self.page.eval_on_selector_all(
            ".notification-list-item-message",
            "nodes => nodes.map(n => n.textContent || '')",
        )
        return [" ".join(str(t).split()) for t in texts]

    def wait_notification(self, pattern: str, timeout: float = 180.0) -> str:
        regex = re.compile(pattern)

        def found() -> str | None:
            return next((t for t in self.notifications() if regex.search(t)), None)

        return poll(f"a notification matching {pattern!r}", found, timeout)

    def notification_item(self, pattern: str) -> Any:
        return self.page.locator(".notification-list-item").filter(
            has=self.page.locator(".notification-list-item-message", has_text=re.compile(pattern))
        )

    def clear_notifications(self) -> None:
        self.run_command("Notifications: Clear All Notifications")
        poll("no notification toasts", lambda: not self.notifications(), timeout=30)

    def editor_text(self) -> str:
        """The active editor's text as shown (the file here is short: every line is drawn)."""
        lines = self.page.eval_on_selector_all(
            ".editor-instance .monaco-editor .view-lines .view-line",
            """nodes => nodes
                .map(n => [parseFloat(n.style.top || '0'), n.textContent || ''])
                .sort((a, b) => a[0] - b[0])
                .map(pair => pair[1])""",
        )
        return "\n".join(str(line).replace("\u00a0", " ") for line in lines)

    def tabs(self) -> dict[str, set[str]]:
        """The editor tabs: file name -> the tab's classes ("active", "dirty", ...)."""
        found = self.page.eval_on_selector_all(
            ".tabs-container .tab",
            "nodes => nodes.map(n => [n.textContent || '', n.className])",
        )
        return {re.sub(r"\s+", "", str(name)): set(str(cls).split()) for name, cls in found}

    def active_file(self) -> str | None:
        return next((name for name, cls in self.tabs().items() if "active" in cls), None)

    def tab_is_dirty(self, name: str) -> bool:
        return "dirty" in self.tabs().get(name, set())

    def body_text(self) -> str:
        return str(self.page.inner_text("body"))

    # ------------------------------------------------------------------ doing

    def palette_entries(self, text: str) -> list[str]:
        """The command palette's entries for `text` (then closed again)."""
        self._open_palette(text)
        labels = poll(
            f"palette entries for {text!r}",
            lambda: self.page.eval_on_selector_all(
                ".quick-input-widget .quick-input-list .monaco-list-row .label-name",
                "nodes => nodes.map(n => n.textContent || '')",
            ),
            timeout=30,
        )
        self.page.keyboard.press("Escape")
        return [" ".join(str(label).split()) for label in labels]

    def _open_palette(self, text: str) -> None:
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget .quick-input-box input")
        box.wait_for(state="visible", timeout=30_000)
        box.fill(f">{text}")

    def run_command(self, title: str) -> None:
        """Run a palette command by its full title ("agent-lsp: Run tests")."""
        self._open_palette(title)
        row = self.page.locator(
            ".quick-input-widget .quick-input-list .monaco-list-row",
            has=self.page.locator(".label-name", has_text=re.compile(f"^{re.escape(title)}$")),
        )
        row.first.wait_for(state="visible", timeout=30_000)
        row.first.click()

    def type_into_input(self, text: str) -> None:
        """Answer an input box (the one a command opened) and press Enter."""
        box = self.page.locator(".quick-input-widget .quick-input-box input")
        box.wait_for(state="visible", timeout=30_000)
        box.fill(text)
        box.press("Enter")

    def open_file(self, name: str) -> None:
        """Quick open (Ctrl+P) `name`; tried again while the list is still settling."""

        def attempt() -> bool:
            self.page.keyboard.press("Escape")
            self.page.keyboard.press("Control+P")
            box = self.page.locator(".quick-input-widget .quick-input-box input")
            box.wait_for(state="visible", timeout=30_000)
            box.fill(name)
            row = self.page.locator(
                ".quick-input-widget .quick-input-list .monaco-list-row",
                has=self.page.locator(".label-name", has_text=re.compile(f"^{re.escape(name)}$")),
            )
            row.first.wait_for(state="visible", timeout=180_000)  # the first search is slow
            row.first.click()  # not Enter: recently opened files come first in the list
            try:
                poll(f"{name} in the editor", lambda: self.active_file() == name, timeout=10)
            except AssertionError:
                return False
            return True

        poll(f"quick open of {name}", attempt, timeout=300, every=1.0)

    def quick_fixes_at_next_problem(self, expect: str, timeout: float = 120.0) -> list[str]:
        """Go to the next problem in the active editor (F8) and open its quick fixes (Ctrl+.);
        returns their titles once one matches `expect`."""
        regex = re.compile(expect)

        def menu() -> list[str] | None:
            self.page.keyboard.press("Escape")
            self.page.keyboard.press("Escape")
            self.focus_editor()
            self.page.keyboard.press("F8")
            self.page.keyboard.press("Escape")  # the peek of the problem
            self.page.keyboard.press("Control+.")
            try:
                self.page.locator(".action-widget").first.wait_for(state="visible", timeout=5000)
            except Exception:
                return None
            titles = [
                " ".join(str(t).split())
                for t in self.page.eval_on_selector_all(
                    ".action-widget .monaco-list-row .title",
                    "nodes => nodes.map(n => n.textContent || '')",
                )
            ]
            return titles if any(regex.search(t) for t in titles) else None

        return poll(f"a quick fix matching {expect!r}", menu, timeout, every=2.0)

    def choose_quick_fix(self, pattern: str) -> None:
        row = self.page.locator(
            ".action-widget .monaco-list-row",
            has=self.page.locator(".title", has_text=re.compile(pattern)),
        )
        row.first.click()

    def focus_editor(self) -> None:
        self.page.locator(".editor-instance .monaco-editor .view-lines").first.click()


@contextmanager
def browser(chromium: str, profile: Path) -> Generator[Any]:
    """Headless Chromium (the system's) with a new empty profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
