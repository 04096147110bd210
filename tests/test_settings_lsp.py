"""Bad config in the language server: warnings in the editor's log, the server keeps working."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from tests.conftest import FIX
from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import fix_average_script


async def test_bad_config_is_reported_and_the_server_still_fixes(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    user = Path(server_env["HOME"]) / ".config" / "agent-lsp" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_bytes("maxSteps = 9 # café\n".encode("latin-1"))
    (project / ".agent-lsp").mkdir(exist_ok=True)
    (project / ".agent-lsp" / "config.toml").write_text("maxStep = 3\nmodel = 'gpt-4o'\n")
    fake_openai.script(*fix_average_script())
    options = cast("dict[str, Any]", ["not", "a", "table"])
    async with editor_session("vscode", project, server_env, options=options) as client:
        uri = client.open(project / "calc.py")
        await ask_agent_to_fix(client, uri)
        done = await client.wait_for_message("agent-lsp: completed", timeout=240)
        assert FIX in client.buffers[uri]
        assert done.message.startswith("agent-lsp: completed")
        log = client.log_text()
        assert f"user config {user}: not UTF-8 text" in log
        assert "unknown key `maxStep` at the top level (did you mean `maxSteps`?)" in log
        assert '`model` is a section, not a value: use `[model] name = "gpt-4o"`' in log
        assert "Traceback" not in log and "ModelSettings" not in log
