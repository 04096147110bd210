"""Real editor: headless Neovim with the shipped plugin (editor-configs/neovim) set up as a user
would, running :AgentFix / :AgentTask against agent-lsp and the fake model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUG, FIX, which_or_skip
from tests.editors.sandbox import ROOT, editor_env
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import SUMMARY, fix_average_script, tool_messages

pytestmark = pytest.mark.editor

PLUGIN = ROOT / "editor-configs" / "neovim"
DRIVER = Path(__file__).with_name("nvim_fix.lua")
MESSAGE = "average([2, 4, 6]) returned 3.0, expected 4"
INFO = 2  # vim.log.levels.INFO


def _lua(text: str | Path) -> str:
    """A Lua string literal (JSON's escapes are valid Lua for these paths)."""
    return json.dumps(str(text), ensure_ascii=False)


def run_nvim(
    mode: str, project: Path, tmp_path: Path, server_env: dict[str, str]
) -> dict[str, Any]:
    """Run the driver in headless Neovim on calc.py; return what it recorded."""
    nvim = which_or_skip("nvim")
    init = tmp_path / "init.lua"
    init.write_text(
        # What a user puts in their init.lua.
        f"vim.opt.runtimepath:append({_lua(PLUGIN)})\n"
        'require("agent_lsp").setup({\n'
        f'  cmd = {{ {_lua(sys.executable)}, "-m", "agent_lsp", "serve" }},\n'
        '  filetypes = { "python" },\n'
        "})\n"
    )
    result = tmp_path / f"nvim-{mode}.json"
    # Nothing lands in ~: Neovim's state, swap, logs (lsp.log) and tempname() go to tmp_path.
    env = editor_env(
        server_env,
        tmp_path,
        AGENT_NVIM_MODE=mode,
        AGENT_NVIM_RESULT=str(result),
        NVIM_LOG_FILE=str(tmp_path / "nvim.log"),
    )
    proc = subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-u",
            str(init),
            "calc.py",
            "-c",
            f"lua dofile({_lua(DRIVER)})",
        ],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    output = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert result.exists(), output
    seen: dict[str, Any] = json.loads(result.read_text())
    assert proc.returncode == 0, f"{output}\nrecorded: {json.dumps(seen, indent=1)[:4000]}"
    assert seen["ok"] is True, output
    return seen


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


def assert_progress_and_outcome(seen: dict[str, Any]) -> None:
    values = [p["value"] for p in seen["progress"]]
    assert {p["token"].split("/")[0] for p in seen["progress"]} == {"agent-lsp"}
    assert values[0]["kind"] == "begin" and values[0]["title"] == "agent-lsp"
    assert any(v["kind"] == "report" and "edit_file" in v.get("message", "") for v in values)
    assert values[-1]["kind"] == "end" and values[-1]["message"].startswith("completed: ")
    assert "model calls" in values[-1]["message"]  # the task's totals (agent_lsp.summary)
    # The statusline text followed the work and is empty again at the end.
    assert "agent: editing calc.py" in seen["statuses"]
    assert "agent: running tests" in seen["statuses"]
    assert seen["statuses"][-1] == "" and seen["status_after"] == ""
    # window/showMessage went through vim.notify, once, at INFO level.
    completed = f"agent-lsp: completed: {SUMMARY} (changed: calc.py)"
    assert seen["outcome"] == completed
    assert [n for n in seen["notifications"] if n["message"] == completed] == [
        {"message": completed, "level": INFO}
    ]
    assert any(n["message"].startswith("agent-lsp: task ") for n in seen["notifications"])


def assert_model_saw_tests_pass(fake_openai: FakeOpenAIServer) -> None:
    assert len(fake_openai.requests) == 4
    assert "2 passed" in tool_messages(fake_openai.requests[-1])[-1]


def test_agent_fix_in_neovim(
    project: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_nvim("fix", project, tmp_path, server_env)

    # :AgentFix asked for code actions with every diagnostic on the line, from both
    # namespaces, the one under the cursor first, then ran the fix command directly.
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

    assert_fixed_in_buffer_then_written(seen, calc, before)
    assert_progress_and_outcome(seen)
    assert_model_saw_tests_pass(fake_openai)
    assert MESSAGE in json.dumps(fake_openai.requests[0])


def test_agent_task_in_neovim(
    project: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_nvim("task", project, tmp_path, server_env)

    assert seen["requests"] == [
        {
            "method": "workspace/executeCommand",
            "params": {
                "command": "agentLsp.runTask",
                "arguments": [{"task": "make the failing test pass"}],
            },
        }
    ]
    assert_fixed_in_buffer_then_written(seen, calc, before)
    assert_progress_and_outcome(seen)
    assert_model_saw_tests_pass(fake_openai)
    assert "make the failing test pass" in json.dumps(fake_openai.requests[0])
