"""agent-lsp against a real model server (llama.cpp, SmolLM2-135M-Instruct): far too weak to fix
anything, which is the point. The harness must hold whatever it does: the run ends by itself
within a bounded number of model calls with a clear outcome, the server accepts every request,
tokens are counted, the model's words are in the session log, nothing outside the workspace
changes and nothing inside changes except through logged edits."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from lsprotocol import types as t

from agent_lsp.demo import copy_sample
from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.realmodel.conftest import CONTEXT, LlamaServer

# The server's start counts against the first test; the run itself takes minutes.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

MAX_STEPS = 2
# At most two requests a step: a stream that breaks off is asked again whole (llama.cpp's
# server cannot stream a tool call it chose itself); the experience distillation is off.
MAX_CALLS = 2 * MAX_STEPS
OUTCOME = re.compile(r"■ (completed|failed|paused|error) after (\d+) steps: .+")


def snapshot(root: Path) -> dict[str, str]:
    """Every file below `root` but agent-lsp's own folder, by content hash."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".agent-lsp" not in p.relative_to(root).parts
    }


def environment(home: Path, server: LlamaServer, tool_calling: str = "auto") -> dict[str, str]:
    config = home / ".config" / "agent-lsp"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        "[model]\n"
        f'baseUrl = "{server.base_url}"\n'
        f'name = "{server.model}"\n'
        f'toolCalling = "{tool_calling}"\n'
        "maxTokens = 96\n"
        f"contextWindow = {CONTEXT}\n"
        'profile = "full"\n'  # the whole harness must hold (the coder test has the small one)
        "timeout = 300\n"
        "maxRetries = 1\n"
        "[memory]\n"
        "distill = false\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AGENT_LSP_", "PYTEST_"))
    }
    env["HOME"] = str(home)
    return env


def log_entries(root: Path) -> list[dict[str, Any]]:
    logs = sorted((root / ".agent-lsp" / "logs").glob("*.jsonl"))
    assert logs, "no session log"
    return [json.loads(line) for path in logs for line in path.read_text().splitlines()]


def assert_the_harness_held(
    server: LlamaServer,
    seen: int,
    root: Path,
    before: dict[str, str],
    canary: Path,
    edited: set[str],
    report: str = "",
) -> list[dict[str, Any]]:
    """What every real-model run must show; `seen` is how many requests the server had
    answered before the run, `edited` the files changed (on disk or in the editor)."""
    answered = server.requests()[seen:]
    entries = log_entries(root)
    why = (
        f"{report}\n--- session log ---\n"
        + "\n".join(json.dumps(e)[:400] for e in entries)
        + f"\n--- server log ---\n{server.log.read_text(errors='replace')[-4000:]}"
    )
    chats = [r for r in answered if r[1].endswith("/chat/completions")]
    assert 1 <= len(chats) <= MAX_CALLS, why
    assert all(200 <= status < 300 for _, _, status in answered), why
    calls = [e for e in entries if e["kind"] == "model_call"]
    assert calls and len(calls) <= len(chats), why
    for call in calls:
        assert call["prompt_tokens"] > 0 and call["completion_tokens"] > 0, why
        assert call["reply"] or call["tool_calls"], why  # the model's words, or its calls
    end = [e for e in entries if e["kind"] == "task_end"][-1]
    assert end["prompt_tokens"] >= sum(c["prompt_tokens"] for c in calls) > 0
    assert end["completion_tokens"] >= sum(c["completion_tokens"] for c in calls) > 0
    assert canary.read_bytes() == b"outside the workspace: never touched\n"
    after = snapshot(root)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    logged = {e["path"] for e in entries if e["kind"] == "file_change"}
    assert changed | edited <= logged, (changed, edited, logged)
    return entries


def test_agent_lsp_run_against_a_real_model(llama_server: LlamaServer, tmp_path: Path) -> None:
    project = copy_sample(tmp_path / "work" / "calc")
    canary = tmp_path / "work" / "canary.txt"
    canary.write_bytes(b"outside the workspace: never touched\n")
    # Native tool calls only: the prompt's prefix stays the same from call to call, so the
    # server evaluates it once (the auto switch to text tools is the editor test's).
    env = environment(tmp_path / "home", llama_server, "native")
    before = snapshot(project)
    seen = len(llama_server.requests())
    argv = [sys.executable, "-m", "agent_lsp", "run", "make the failing test pass"]
    done = subprocess.run(
        [*argv, "--root", str(project), "--max-steps", str(MAX_STEPS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    report = done.stdout + done.stderr
    assert done.returncode in (0, 1, 3), report
    assert "Traceback" not in report
    outcomes = [m for line in done.stdout.splitlines() if (m := OUTCOME.fullmatch(line))]
    assert len(outcomes) == 1, report
    assert int(outcomes[0][2]) <= MAX_STEPS
    if outcomes[0][1] == "error":  # only a model error may end it so, and it says which
        assert "model error:" in outcomes[0][0], report
    assert_the_harness_held(llama_server, seen, project, before, canary, set(), report)


async def test_the_language_server_against_a_real_model(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    project = copy_sample(tmp_path / "work" / "calc")
    canary = tmp_path / "work" / "canary.txt"
    canary.write_bytes(b"outside the workspace: never touched\n")
    env = environment(tmp_path / "home", llama_server)
    before = snapshot(project)
    seen = len(llama_server.requests())
    calc = project / "calc.py"
    async with editor_session("vscode", project, env, {"maxSteps": MAX_STEPS}) as client:
        uri = client.open(calc)
        await ask_agent_to_fix(client, uri)
        final = await _final_message(client)
        edited = {
            Path(unquote(urlparse(change.text_document.uri).path))
            .resolve()
            .relative_to(project.resolve())
            .as_posix()
            for params in client.edits_received
            for change in params.edit.document_changes or []
            if isinstance(change, t.TextDocumentEdit)
        }
    assert re.match(r"agent-lsp: (completed|failed|paused|error): .+", final.message), final
    assert before == snapshot(project)  # the editor holds the edits; the disk is untouched
    messages = "\n".join(m.message for m in client.messages)
    assert_the_harness_held(llama_server, seen, project, before, canary, edited, messages)


async def _final_message(client: Any, timeout: float = 1200) -> t.ShowMessageParams:
    import asyncio

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    final = re.compile(r"agent-lsp: (completed|failed|paused|error|cancelled): ")
    while loop.time() < deadline:
        for message in client.messages:
            if final.match(message.message):
                return message
        await asyncio.sleep(0.2)
    raise AssertionError(f"no final message; got {[m.message for m in client.messages]}")
