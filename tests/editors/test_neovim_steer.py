"""Real editor: in Neovim 0.12, a line `# AGENT: use the helper in util.py` typed while a task runs
leaves the buffer (the server's edit), the next model request has the note, progress says so."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.editors.test_neovim import (  # the Neovim tests' own helpers
    Nvim,
    _env,  # pyright: ignore[reportPrivateUsage]
    _lua,  # pyright: ignore[reportPrivateUsage]
    _nvim012,  # pyright: ignore[reportPrivateUsage]
    _version,  # pyright: ignore[reportPrivateUsage]
    plugin_init,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script

pytestmark = [pytest.mark.editor, pytest.mark.timeout(300)]

DRIVER = Path(__file__).with_name("nvim_steer.lua")
NOTE = "use the helper in util.py"


def test_an_agent_line_typed_in_neovim_steers_the_task(
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    path = _nvim012()
    nvim = Nvim(path, _version(path))
    asked, typed = tmp_path / "asked", tmp_path / "typed"

    def first(_: object) -> Reply:  # the model thinks until the user has typed the note
        asked.touch()
        deadline = time.monotonic() + 100
        while not typed.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})])

    fake_openai.script(first, *fix_average_script()[1:])
    calc = project / "calc.py"
    before = calc.read_text()
    init = tmp_path / "init.lua"
    init.write_text(plugin_init())
    env = _env(
        "steer", tmp_path, server_env, AGENT_MARK_ASKED=str(asked), AGENT_MARK_TYPED=str(typed)
    )
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

    assert seen["typed"] == f"# AGENT: {NOTE}"
    assert seen["after"] == before  # only the typed line went
    assert fake_openai.requests[1]["messages"][-1] == {
        "role": "user",
        "content": f"A note from the user, sent while you work: {NOTE}",
    }
    assert any(f"steer: {NOTE}" in m for m in seen["progress"]), seen["progress"]
    assert seen["outcome"].startswith("agent-lsp: completed: ")
