"""docs/editors.md: every configuration snippet parses, names the real command, and that command
starts a server that answers `initialize` with the agent's commands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "editors.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == kind]


def commands_in(data: Any) -> list[list[str]]:
    """Every command line ("command" + "args", or a list) found in a parsed snippet."""
    found: list[list[str]] = []
    if isinstance(data, dict):
        command = data.get("command") or data.get("path")
        if isinstance(command, list):
            found.append([str(c) for c in command])
        elif isinstance(command, str):
            args = data.get("args") or data.get("arguments") or []
            found.append([command, *map(str, args)])
        for value in data.values():
            found.extend(commands_in(value))
    elif isinstance(data, list):
        for value in data:
            found.extend(commands_in(value))
    return found


def test_toml_and_json_snippets_parse_and_start_agent_lsp() -> None:
    parsed = [tomllib.loads(b) for b in blocks("toml")] + [json.loads(b) for b in blocks("json")]
    assert len(parsed) == 5  # Helix, Zed, Sublime, Kate over LSP; Zed's agent panel over ACP
    acp = [s for s in parsed if "agent_servers" in s]
    assert acp == [{"agent_servers": {"agent-lsp": {"command": "agent-lsp", "args": ["acp"]}}}]
    for snippet in parsed:
        if snippet not in acp:
            assert ["agent-lsp", "serve"] in commands_in(snippet), snippet
    helix = parsed[0]
    assert "agent-lsp" in helix["language"][0]["language-servers"]


@pytest.mark.timeout(60)
def test_the_documented_command_answers_initialize(tmp_path: Path) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
        }
    ).encode()
    exit_ = json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode()
    stream = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in (body, exit_))
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "serve"],
        input=stream,
        capture_output=True,
        timeout=60,
        check=False,
    )
    answer = json.loads(done.stdout.split(b"\r\n\r\n", 1)[1].split(b"Content-Length")[0])
    commands = answer["result"]["capabilities"]["executeCommandProvider"]["commands"]
    assert {"agentLsp.fix", "agentLsp.runTask", "agentLsp.runTests", "agentLsp.cancel"} <= set(
        commands
    )
    assert answer["result"]["serverInfo"]["name"] == "agent-lsp"
