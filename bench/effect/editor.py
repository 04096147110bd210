"""agent-lsp's editor path, driven as an editor would: `agent-lsp serve` over stdio with the
test suite's LSP client (tests/e2e/editor_client.py: it holds buffers and applies the
server's `workspace/applyEdit` edits to them). The file of the task's diagnostic is opened, the
code actions for that diagnostic are asked for and "Ask agent to fix" is executed; a task without
a diagnostic (a feature) runs as `agentLsp.runTask` with its text. When the task's outcome is
shown, every buffer the agent edited is saved to disk (the user's save), so the judge sees it."""

from __future__ import annotations

import asyncio
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types as t

from bench.effect.tasks import Task
from tests.e2e.editor_client import EditorClient, editor_session

FINAL = re.compile(r"agent-lsp: (completed|failed|paused|error|cancelled): (.*)", re.S)
STEPS = re.compile(r"(\d+) steps?\b")
LANGUAGE_IDS = {"python": "python", "javascript": "javascript", "go": "go"}


@dataclass
class EditorRun:
    status: str | None  # None: no outcome within the time limit
    detail: str
    steps: int | None
    transcript: str


def _diagnostic(task: Task) -> t.Diagnostic | None:
    if task.diagnostic is None:
        return None
    d = task.diagnostic
    text = (task.project / d.file).read_text().splitlines()[d.line - 1]
    start = len(text) - len(text.lstrip())
    return t.Diagnostic(
        range=t.Range(
            start=t.Position(line=d.line - 1, character=start),
            end=t.Position(line=d.line - 1, character=len(text)),
        ),
        message=d.message,
        source=d.source,
        severity=t.DiagnosticSeverity.Error,
    )


async def _start(client: EditorClient, task: Task, root: Path, text: str) -> str:
    """Starts the task the way a user does; returns what was done."""
    diagnostic = _diagnostic(task)
    target = root / (task.diagnostic.file if task.diagnostic else task.files[0])
    uri = client.open(target, LANGUAGE_IDS[task.language])
    if diagnostic is not None:
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=t.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        for action in actions or []:
            command = action.command if isinstance(action, t.CodeAction) else None
            if command is not None and command.command == "agentLsp.fix":
                result = await client.workspace_execute_command_async(
                    t.ExecuteCommandParams(command=command.command, arguments=command.arguments)
                )
                return f"code action {action.title!r} -> {result}"
        titles = [a.title for a in actions or []]
        raise RuntimeError(f"no 'Ask agent to fix' among the code actions {titles}")
    result = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentLsp.runTask", arguments=[{"task": text, "uri": uri}])
    )
    return f"agentLsp.runTask -> {result}"


async def _outcome(client: EditorClient, deadline: float) -> re.Match[str] | None:
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        for message in client.messages:
            if found := FINAL.match(message.message):
                return found
        await asyncio.sleep(0.5)
    return None


def _save_edited(client: EditorClient) -> list[str]:
    uris = {
        change.text_document.uri
        for params in client.edits_received
        for change in params.edit.document_changes or []
        if isinstance(change, t.TextDocumentEdit)
    } | {uri for params in client.edits_received for uri in (params.edit.changes or {})}
    for uri in sorted(uris):
        if uri in client.buffers:
            client.save(uri)
    return sorted(uris)


async def drive(
    task: Task, root: Path, env: dict[str, str], timeout: float, text: str
) -> EditorRun:
    lines: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    command = [sys.executable, "-m", "agent_lsp", "serve"]
    found: re.Match[str] | None = None
    async with editor_session("vscode", root, env, {}, command) as client:
        try:
            lines.append(await _start(client, task, root, text))
            found = await _outcome(client, deadline)
            if found is None:
                await client.workspace_execute_command_async(
                    t.ExecuteCommandParams(command="agentLsp.cancel", arguments=[{}])
                )
                await _outcome(client, loop.time() + 60)
        finally:
            saved = _save_edited(client)
            lines.append(f"saved: {saved}")
            lines.extend(f"[message] {m.message}" for m in client.messages)
            lines.extend(f"[log] {m.message}" for m in client.log_messages)
    if found is None:
        return EditorRun(None, "cancelled at the time limit", None, "\n".join(lines))
    steps = STEPS.search(found[2])
    return EditorRun(found[1], found[2].strip(), int(steps[1]) if steps else None, "\n".join(lines))
