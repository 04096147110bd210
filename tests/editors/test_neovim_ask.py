"""Real editor: in Neovim 0.12 the agent asks (ask_user) and nobody answers. The question is
shown with its answers while the agent waits; after askTimeout the model is told there was no
answer, and the task goes on to its end."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUG, FIX
from tests.editors.test_neovim import (  # the Neovim tests' own helpers
    Nvim,
    _env,  # pyright: ignore[reportPrivateUsage]
    _lua,  # pyright: ignore[reportPrivateUsage]
    _nvim012,  # pyright: ignore[reportPrivateUsage]
    _version,  # pyright: ignore[reportPrivateUsage]
    plugin_init,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import SUMMARY, fix_average_script, tool_messages

pytestmark = [pytest.mark.editor, pytest.mark.timeout(300)]

DRIVER = Path(__file__).with_name("nvim_ask.lua")
ASK = Reply(
    tool_calls=[ToolCall("ask_user", {"question": "Fix average()?", "options": ["Yes", "No"]})]
)


def test_a_question_nobody_answers_times_out_and_the_task_goes_on(
    project: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    path = _nvim012()
    nvim = Nvim(path, _version(path))
    fake_openai.script(ASK, *fix_average_script())
    init = tmp_path / "init.lua"
    init.write_text(plugin_init(more="  init_options = { askTimeout = 2 },\n"))
    env = _env("ask", tmp_path, server_env)
    command = [nvim.path, "--headless", "--clean", "-u", str(init), "calc.py"]
    proc = subprocess.run(
        [*command, "-c", f"lua dofile({_lua(DRIVER)})"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    seen: dict[str, Any] = json.loads(Path(env["AGENT_NVIM_RESULT"]).read_text())
    assert proc.returncode == 0 and seen["ok"] is True, (proc.stderr, seen)

    # the question was shown with its answers while the agent waited, once
    assert seen["prompts"] == [{"prompt": "Fix average()?: ", "items": ["Yes", "No", "Skip"]}]
    # the model was told there was no answer, and the task went on and ended
    assert "no answer: no answer within 2 s" in tool_messages(fake_openai.requests[1])[0]
    assert len(fake_openai.requests) == 5
    assert seen["outcome"].startswith(f"agent-lsp: completed: {SUMMARY}"[:60])
    assert FIX in seen["buffer"] and BUG not in seen["buffer"]
