"""`agent-lsp acp` driven by the TypeScript ACP SDK's client (`@agentclientprotocol/sdk`, the
one Zed's and other clients' code is written against), installed with npm into a temporary
folder once per run: the fix end to end, its edit as a diff with the exact texts, the context's
usage after each model call. Skipped, with the reason, when npm cannot reach its registry; under
CI=1 that is a failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUG, FIX, which_or_skip
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import SUMMARY, fix_average_script

SDK = "@agentclientprotocol/sdk@2.4.0"  # its default entry: protocol version 1, stable
CLIENT = Path(__file__).with_name("acp_client.mjs")


@pytest.fixture(scope="session")
def sdk_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    which_or_skip("node")
    npm = which_or_skip("npm")
    folder = tmp_path_factory.mktemp("acp-node")
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), SDK],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0:
        why = "timed out" if done is None else done.stderr.strip().splitlines()[-1:]
        message = f"npm could not install {SDK}: {why}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    entry = folder / "node_modules" / "@agentclientprotocol/sdk/dist/v1/stable/acp.js"
    assert entry.is_file(), entry
    return entry


def node_client(
    entry: Path, project: Path, env: dict[str, str], prompt: str, answer: str
) -> dict[str, Any]:
    node = which_or_skip("node")
    done = subprocess.run(
        [node, str(CLIENT), str(entry), sys.executable, str(project), prompt, answer],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_typescript_sdk_client_runs_the_fix(
    sdk_entry: Path, project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    user = Path(server_env["HOME"]) / ".config" / "agent-lsp" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[model]\ncontextWindow = 50000\n")  # the user's setting: the window
    script = fix_average_script()
    fake_openai.script(*[replace(r, usage=(1000 + i, 20 + i)) for i, r in enumerate(script)])
    before = (project / "calc.py").read_text()
    out = node_client(sdk_entry, project, server_env, "make the failing test pass", "allow_once")
    assert out["code"] == 0
    assert out["init"]["protocolVersion"] == 1
    assert out["init"]["agentCapabilities"]["loadSession"] is True
    assert out["stopReason"] == "end_turn"
    assert (out["usage"]["inputTokens"], out["usage"]["outputTokens"]) == (4006, 86)  # the task's
    after = before.replace(BUG, FIX)
    assert (project / "calc.py").read_text() == after
    updates = out["updates"]
    starts = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call"}
    assert {u["kind"] for u in starts.values()} >= {"read", "edit", "execute"}
    diffs = [
        c
        for u in updates
        if u["sessionUpdate"] == "tool_call_update"
        for c in u.get("content") or []
        if c["type"] == "diff"
    ]
    path = str(project.resolve() / "calc.py")
    assert diffs and all(
        (d["path"], d["oldText"], d["newText"]) == (path, before, after) for d in diffs
    )
    last = {u["toolCallId"]: u.get("status") for u in updates if u.get("status")}
    assert set(last) == set(starts) and set(last.values()) == {"completed"}, last
    said = "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert SUMMARY in said
    # the context's usage after each model call: the request's prompt and reply tokens, of the
    # window the session uses (the user's setting)
    usage = [(u["used"], u["size"]) for u in updates if u["sessionUpdate"] == "usage_update"]
    assert usage == [(1020 + 2 * i, 50_000) for i in range(len(script))], usage
