"""The VS Code extension (editor-configs/vscode): its generated settings block is current; it
builds as CI builds it (`npm ci`, prettier, strict TypeScript, unit tests, `vsce package`); and the
built extension, run in Node with a stand-in for the VS Code API (test-host/), drives a real
agent-lsp server from the palette."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.config import vscode as vscodegen
from agent_lsp.config.schema import Settings
from tests.conftest import BUG, FIX, which_or_skip
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import SUMMARY, fix_average_script, outcome

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "editor-configs" / "vscode"
PACKAGE_JSON = EXTENSION / "package.json"
# npm's download cache, kept across runs so that reruns do not download again.
NPM_CACHE = Path(tempfile.gettempdir()) / "agent-lsp-npm-cache"
# Build products and installs, never copied into the build folder.
LOCAL_ONLY = ("node_modules", "out", "*.vsix")


def _manifest() -> dict[str, Any]:
    return json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))


def test_settings_block_matches_the_schema() -> None:
    assert _manifest()["contributes"]["configuration"] == vscodegen.configuration(), (
        "editor-configs/vscode/package.json is stale: run `python -m agent_lsp.config.vscode`"
    )
    # Byte for byte too: the generator's output is what is committed.
    assert vscodegen.updated(PACKAGE_JSON.read_text(encoding="utf-8")) == PACKAGE_JSON.read_text(
        encoding="utf-8"
    )


def test_rendered_settings_follow_the_schema() -> None:
    properties = vscodegen.render()
    assert properties["agentLsp.server.path"]["default"] == "agent-lsp"
    assert properties["agentLsp.server.args"]["default"] == ["serve"]
    assert "agentLsp.model.apiKey" not in properties  # keys come from the environment
    for key in (
        "model.baseUrl",
        "model.name",
        "applyMode",
        "permissionLevel",
        "suggestions.enabled",
        "tests.runOnSave",
        "maxSteps",
    ):
        assert f"agentLsp.{key}" in properties, key
    assert properties["agentLsp.applyMode"]["enum"] == ["direct", "review"]
    assert properties["agentLsp.permissionLevel"]["default"] == "L2"
    assert properties["agentLsp.maxSteps"] == {
        "type": "integer",
        "default": 25,
        "minimum": 1,
        "maximum": 500,
        "markdownDescription": "Most model turns one task may take.",
        "scope": "window",
        "order": properties["agentLsp.maxSteps"]["order"],
    }
    assert properties["agentLsp.model.temperature"]["type"] == ["number", "null"]
    assert properties["agentLsp.model.timeout"]["exclusiveMinimum"] == 0
    orders = [prop["order"] for prop in properties.values()]
    assert orders == list(range(len(properties)))


def test_what_widens_the_agent_is_a_user_setting_only() -> None:
    """VS Code reads "application" settings from the User settings only, never from workspace
    and folder settings: a repository's (or the agent's) .vscode/settings.json cannot raise the
    level, turn the sandbox off, move the model, add roots, run anything by itself, or pick the
    server's command line. Not "machine": VS Code drops those from the User settings of a
    remote window (code-server), so the user's own agentLsp.server.path would be ignored."""
    properties = vscodegen.render()
    user_only = {
        key.removeprefix("agentLsp.")
        for key, p in properties.items()
        if p["scope"] == "application"
    }
    for key in (
        "server.path",
        "server.args",
        "permissionLevel",
        "extraRoots",
        "sandbox.enabled",
        "sandbox.network",
        "sandbox.passEnv",
        "tests.runOnSave",
        "lint.enabled",
        "suggestions.enabled",
        "memory.distill",
    ):
        assert key in user_only, key
    assert {k for k in properties if k.startswith("agentLsp.model.")} <= {
        f"agentLsp.{k}" for k in user_only
    }
    window = {
        key.removeprefix("agentLsp.") for key, p in properties.items() if p["scope"] == "window"
    }
    assert window == {
        "trace.server",
        "maxSteps",
        "maxAttempts",
        "toolTimeout",
        "editTimeout",
        "maxTokens",
        "tests.timeout",
        "memory.maxInjected",
        "memory.initStepTimeout",
        "askTimeout",
        "compaction.fix",
        "compaction.task",
        "compaction.explain",
        "tests.args",  # the tests run the repository's code already (README: tests.args)
        "tests.command",  # runs where scripts.test would: the sandbox, or the gate asks
        "team.enabled",
        "team.workers",
        "team.reviewRounds",
        "team.budgetTokens",
        "team.budgetSeconds",
        "team.progress",
        "team.shares",
    }
    assert user_only | window == {k.removeprefix("agentLsp.") for k in properties}
    manifest = _manifest()["contributes"]["configuration"]["properties"]
    assert manifest["agentLsp.permissionLevel"]["scope"] == "application"  # as committed
    assert manifest["agentLsp.server.path"]["scope"] == "application"
    assert not [k for k, p in manifest.items() if p["scope"] in ("machine", "machine-overridable")]


def test_defaults_validate_as_the_server_reads_them() -> None:
    """Every contributed default, sent as the editor layer, is what the schema itself uses."""
    tree: dict[str, Any] = {}
    for key, prop in vscodegen.render().items():
        parts = key.removeprefix("agentLsp.").split(".")
        if parts[0] in ("server", "trace"):
            continue
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = prop["default"]
    assert Settings.model_validate(tree) == Settings.model_validate({})


def test_generator_keeps_the_rest_of_package_json(tmp_path: Path) -> None:
    target = tmp_path / "package.json"
    target.write_text(
        json.dumps({"name": "x", "contributes": {"commands": [], "configuration": {}}, "z": 1})
    )
    assert vscodegen.main(["--check", "--package-json", str(target)]) == 1
    assert vscodegen.main(["--package-json", str(target)]) == 0
    written = json.loads(target.read_text(encoding="utf-8"))
    assert list(written) == ["name", "contributes", "z"]
    assert written["contributes"]["commands"] == []
    assert written["contributes"]["configuration"] == vscodegen.configuration()
    assert vscodegen.main(["--check", "--package-json", str(target)]) == 0


def test_palette_commands_do_not_clash_with_the_server_commands() -> None:
    """vscode-languageclient registers the server's advertised command IDs itself."""
    manifest = _manifest()
    contributed = {c["command"] for c in manifest["contributes"]["commands"]}
    server = {
        "agentLsp.fix",
        "agentLsp.runTask",
        "agentLsp.runTests",
        "agentLsp.cancel",
        "agentLsp.showLog",
        "agentLsp.remember",
        "agentLsp.continue",
        "agentLsp.steer",
        "agentLsp.improve",
        "agentLsp.improveList",
        "agentLsp.improveRevert",
    }
    assert contributed == {
        "agentLsp.palette.runTask",
        "agentLsp.palette.runTests",
        "agentLsp.palette.cancel",
        "agentLsp.palette.showLog",
        "agentLsp.palette.remember",
        "agentLsp.palette.continue",
        "agentLsp.palette.steer",
        "agentLsp.palette.improve",
        "agentLsp.palette.improveList",
        "agentLsp.palette.improveRevert",
    }
    assert not contributed & server
    assert manifest["main"] == "./out/extension.js"
    assert manifest["engines"]["vscode"] == "^1.82.0"


def _npm(npm: str, *args: str, cwd: Path) -> str:
    env = dict(os.environ, npm_config_cache=str(NPM_CACHE), npm_config_update_notifier="false")
    env.pop("NODE_OPTIONS", None)
    proc = subprocess.run(
        [npm, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"npm {' '.join(args)} failed ({proc.returncode}):\n{output}"
    return output


_BUILT: list[Path] = []


def build_extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension built once per test run (these tests and the real-editor ones share it)."""
    if not _BUILT:
        _BUILT.append(_build(tmp_path_factory))
    return _BUILT[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_extension(tmp_path_factory)


def _build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the extension built as CI builds it; the unit tests pass in it."""
    npm = which_or_skip("npm")
    build = tmp_path_factory.mktemp("vscode") / "vscode"
    shutil.copytree(EXTENSION, build, ignore=shutil.ignore_patterns(*LOCAL_ONLY))
    # --ignore-scripts: no dependency needs an install script (vsce-sign's is for signing only).
    _npm(npm, "ci", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", cwd=build)
    _npm(npm, "run", "lint", cwd=build)
    _npm(npm, "run", "compile", cwd=build)
    tests = _npm(npm, "test", cwd=build)
    assert "# fail 0" in tests, tests
    assert "# pass " in tests, tests
    _npm(npm, "run", "package", cwd=build)
    return build


@pytest.mark.editor
@pytest.mark.timeout(600)
def test_extension_builds_tests_and_packages(built: Path) -> None:
    (vsix,) = built.glob("*.vsix")
    with zipfile.ZipFile(vsix) as archive:
        names = {name.lower() for name in archive.namelist()}
        manifest = json.loads(archive.read("extension/package.json"))
    assert {
        "extension/package.json",
        "extension/out/extension.js",
        "extension/out/logic.js",
        "extension/readme.md",
        "extension/node_modules/vscode-languageclient/package.json",
    } <= names
    assert not any(
        name.startswith(("extension/src/", "extension/out/test/", "extension/test-host/"))
        for name in names
    )
    assert {n for n in names if n.startswith("extension/license")}, names
    assert manifest["contributes"]["configuration"] == vscodegen.configuration()


def run_host(
    built: Path, scenario: str, project: Path, env: dict[str, str], settings: dict[str, Any]
) -> dict[str, Any]:
    """The compiled extension in Node with a stand-in for VS Code (test-host/), driving a real
    agent-lsp server from the palette; returns what the user saw and the LSP traffic."""
    node = which_or_skip("node")
    result = project.parent / f"host-{scenario}.json"
    env = dict(
        env,
        EXT_DIR=str(built),
        SCENARIO=scenario,
        WORKSPACE=str(project),
        RESULT=str(result),
        SETTINGS=json.dumps(settings),
        INPUTS=json.dumps(["  make the failing test pass  ", "tests run with pytest"]),
    )
    # The server under test is this checkout, whatever the cwd.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [node, str(built / "test-host" / "run.js")],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    output = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0 and result.exists(), output
    seen: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    assert seen["error"] is None, f"{seen['error']}\n{seen['output']}"
    assert seen["unhandled"] == [], seen["output"]
    return seen


def _sent(seen: dict[str, Any], method: str) -> list[Any]:
    return [
        t["body"]
        for t in seen["traffic"]
        if t["direction"] == "Sending" and t["kind"] != "response" and t["method"] == method
    ]


def _offset(text: str, position: dict[str, int]) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: position["line"]]) + position["character"]


def _edited(seen: dict[str, Any], path: Path, text: str) -> str:
    """`text` with every workspace/applyEdit the editor received for `path` applied (ASCII)."""
    for request in (
        t["body"]
        for t in seen["traffic"]
        if t["direction"] == "Received" and t["method"].startswith("workspace/applyEdit")
    ):
        edit: dict[str, Any] = request["edit"]
        changes: list[tuple[str, list[dict[str, Any]]]] = [
            (c["textDocument"]["uri"], c["edits"]) for c in edit.get("documentChanges") or []
        ] + list((edit.get("changes") or {}).items())
        for uri, edits in changes:
            if uri != path.as_uri():
                continue
            starts = sorted(
                ((_offset(text, e["range"]["start"]), e) for e in edits),
                key=lambda pair: pair[0],
                reverse=True,
            )
            for start, e in starts:
                end = _offset(text, e["range"]["end"])
                text = text[:start] + e["newText"] + text[end:]
    return text


@pytest.mark.editor
@pytest.mark.timeout(600)
def test_palette_task_status_bar_and_settings_against_agent_lsp(
    built: Path, project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()
    settings = {
        "agentLsp.server.path": sys.executable,
        "agentLsp.server.args": ["-m", "agent_lsp", "serve"],
        "agentLsp.trace.server": "verbose",
        "agentLsp.maxSteps": 10,
        "agentLsp.model.maxRetries": 0,
    }

    seen = run_host(built, "task", project, server_env, settings)

    # agent-lsp: Run task... -> agentLsp.runTask with the trimmed text; the agent fixed the file.
    assert seen["inputs"][0] == "agent-lsp: Run task"
    assert _sent(seen, "workspace/executeCommand")[0] == {
        "command": "agentLsp.runTask",
        "arguments": [{"task": "make the failing test pass"}],
    }
    # The fix went to the editor (which loads the closed file into a buffer, unsaved), not to
    # the disk.
    assert _edited(seen, calc, before) == before.replace(BUG, FIX)
    assert calc.read_text() == before
    # Four for the task; then Agent: Remember... asks the model once to distil the note.
    assert len(fake_openai.requests) == 5
    assert fake_openai.requests[4]["messages"][0]["content"].startswith("You distil")
    texts = [m["text"] for m in seen["messages"]]
    levels = {m["level"] for m in seen["messages"]}
    assert "error" not in levels, seen["messages"]
    started = r"agent-lsp: task \w+ started \(agent-lsp: Cancel task stops it\)"
    assert [t for t in texts if re.fullmatch(started, t)], texts
    completed = outcome(f"agent-lsp: completed: {SUMMARY} (changed: calc.py)")  # no re-check
    assert [t for t in texts if re.fullmatch(completed, t)], texts
    # The task's progress is a notification with Cancel (not vscode-languageclient's status-bar
    # spinner, which has none), and it got every report.
    notification = 15  # vscode.ProgressLocation.Notification
    assert seen["progress"] == [
        {"location": notification, "title": "agent-lsp", "cancellable": True}
    ]
    assert "edit_file: success: edited calc.py at line 10" in [
        m["text"] for m in seen["messages"] if m["level"] == "progress"
    ]

    # The status bar followed the task and went idle; the context key flipped twice.
    status = seen["status"]
    assert status[0] == "$(hubot) agent" and status[-1] == "$(hubot) agent"
    assert "$(sync~spin) agent: make the failing test pass" in status
    assert "$(sync~spin) agent: editing calc.py" in status
    assert "$(sync~spin) agent: running tests" in status
    assert seen["contexts"] == [False, True, False]

    # Cancel with nothing running, before and after the restart; remember; show log; run tests.
    assert texts.count("agent-lsp: no task to cancel") == 2
    initialize = [
        t["body"]
        for t in seen["traffic"]
        if t["method"] == "initialize" and t["direction"] == "Received"
    ]
    advertised = initialize[0]["capabilities"]["executeCommandProvider"]["commands"]
    if "agentLsp.remember" in advertised:
        assert "agent-lsp: noted" in texts or any("remember" in t for t in texts), texts
    else:
        assert "agent-lsp: this server has no agentLsp.remember command (update agent-lsp)" in texts
    assert "output: agent-lsp" in texts or seen["opened"]
    assert "agent-lsp: running the tests" in texts
    assert any(t.startswith("agent-lsp: tests: 2 passed") for t in texts), texts

    # Settings: only what the user set reaches the server, never the extension's own keys.
    params = _sent(seen, "initialize")
    assert len(params) == 2  # agentLsp.server.args changed: the server was restarted
    user = {"maxSteps": 10, "model": {"maxRetries": 0}}
    assert [p["initializationOptions"] for p in params] == [
        user,
        {**user, "tests": {"runOnSave": True}},
    ]
    changes = [c["settings"] for c in _sent(seen, "workspace/didChangeConfiguration")]
    assert changes[0] == {"agentLsp": user}
    pulled = [  # the server's workspace/configuration: the same, never VS Code's defaults
        t["body"]
        for t in seen["traffic"]
        if t["method"].startswith("workspace/configuration") and t["kind"] == "response"
    ]
    assert pulled and pulled[0] == [user]
    assert {"agentLsp": {**user, "tests": {"runOnSave": True}}} in changes


@pytest.mark.editor
@pytest.mark.timeout(600)
def test_a_missing_server_is_explained(
    built: Path, project: Path, server_env: dict[str, str]
) -> None:
    seen = run_host(
        built, "missing", project, server_env, {"agentLsp.server.path": "/nonexistent/agent-lsp"}
    )
    texts = [(m["level"], m["text"]) for m in seen["messages"]]
    errors = [m for m in seen["messages"] if m["level"] == "error"]
    assert errors == [
        {
            "level": "error",
            "text": 'agent-lsp: the server "/nonexistent/agent-lsp" was not found (no such '
            "executable file). Install it from a checkout of agent-lsp: `uv tool install .` (or "
            "`pipx install .`) in it, or set agentLsp.server.path to its full path in your "
            "User settings.",
            "items": ["Open setting"],
        }
    ], texts
    assert ("warning", "agent-lsp is not running (see the agent-lsp output for why)") in texts
    assert seen["inputs"] == []  # not asked for a task it cannot run
    assert seen["status"] == ["$(hubot) agent"]


@pytest.mark.editor
@pytest.mark.timeout(600)
def test_a_server_off_the_extension_hosts_path_is_found(
    built: Path, project: Path, server_env: dict[str, str]
) -> None:
    """VS Code started from a launcher (or code-server) has a PATH without ~/.local/bin, where
    `uv tool install` and `pipx install` put agent-lsp: the default setting still finds it."""
    home = Path(server_env["HOME"])
    installed = home / ".local" / "bin" / "agent-lsp"
    installed.parent.mkdir(parents=True)
    installed.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agent_lsp "$@"\n')
    installed.chmod(0o755)
    env = dict(server_env, PATH="/usr/bin:/bin")
    seen = run_host(built, "located", project, env, {})
    texts = [m["text"] for m in seen["messages"]]
    assert not [m for m in seen["messages"] if m["level"] == "error"], texts
    assert any(t.startswith("agent-lsp: tests: 1 passed, 1 failed") for t in texts), texts

    # Nowhere at all: the message says where it looked, how to install, and offers the setting.
    installed.unlink()
    seen = run_host(built, "missing", project, env, {})
    (error,) = [m for m in seen["messages"] if m["level"] == "error"]
    assert error["text"] == (
        'agent-lsp: the server "agent-lsp" was not found (looked on PATH and in ~/.local/bin, '
        f"~/.local/share/agent-lsp/bin, {project}/.venv/bin). Install it from a checkout of "
        "agent-lsp: `uv tool install .` (or `pipx install .`) in it, or set agentLsp.server.path "
        "to its full path in your User settings."
    )
    assert error["items"] == ["Open setting"]
