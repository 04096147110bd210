"""Session logs: one JSON-lines file per session under `.agent-lsp/logs/`; every model call,
tool call, command, file change and memory update with a timestamp and its source. `render`
turns them into lines for people (`agent-lsp log`, follow mode included)."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_lsp.fileio import open_append
from agent_lsp.messages import ModelReply, ToolCall, ToolResult, Usage
from agent_lsp.safety.reads import ReadGuard

log = logging.getLogger(__name__)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_session_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + os.urandom(3).hex()


class SessionLog:
    """Appends one JSON object per line; a failing disk never fails the agent."""

    def __init__(self, folder: Path, session_id: str, within: Path | None = None) -> None:
        """`within`: the workspace (links below it are refused; by default, links below the
        folder holding `.agent-lsp`)."""
        self.path = folder / f"{session_id}.jsonl"
        self.session_id = session_id
        self.within = within
        self._lock = threading.Lock()
        self._broken = False
        # who else hears of every record as it is written (`run --json`); never fails the agent
        self.listeners: list[Callable[[dict[str, Any]], None]] = []

    def record(self, kind: str, source: str, **data: Any) -> None:
        entry = {"ts": now_iso(), "kind": kind, "source": source, **data}
        for listener in self.listeners:
            try:
                listener(entry)
            except Exception as exc:
                log.warning("session log listener failed: %s", exc)
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            try:
                with open_append(self.path, self.within) as fh:
                    fh.write(line)
            except OSError as exc:
                if not self._broken:
                    log.warning("session log %s not writable: %s", self.path, exc)
                self._broken = True


REPLY_CHARS = 2000  # how much of each model reply the session log keeps


def bounded(text: str | None) -> str:
    text = text or ""
    if len(text) <= REPLY_CHARS:
        return text
    return f"{text[:REPLY_CHARS]}[... {len(text) - REPLY_CHARS} more characters]"


def model_call_fields(reply: ModelReply, usage: Usage, seconds: float) -> dict[str, Any]:
    """What a `model_call` record holds of one call (the single agent's and team roles')."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "latency_ms": round(seconds * 1000),
        "tool_calls": [c.name for c in reply.tool_calls],
        "reply": bounded(reply.content),
        "finish_reason": reply.finish_reason,
        "estimated": usage.estimated,
        "notes": reply.notes,
    }


def tool_call_fields(call: ToolCall, result: ToolResult, seconds: float) -> dict[str, Any]:
    """What a `tool_call` record holds of one tool run."""
    return {
        "tool": call.name,
        "arguments": call.arguments[:300],
        "status": result.status.value,
        "error": result.error,
        "duration_ms": round(seconds * 1000),
    }


def session_logs(folder: Path, reads: ReadGuard | None = None) -> list[Path]:
    """Session logs, oldest first (none through a link out of the workspace)."""
    guard = reads or ReadGuard(folder.parent.parent)
    found = guard.folder(folder, "", keep=lambda p: p.suffix == ".jsonl")
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name))


def _clock(ts: str) -> str:
    return ts[11:19] if len(ts) >= 19 else ts


def _tokens(e: dict[str, Any]) -> str:
    about = "~" if e.get("estimated") else ""  # counted by agent-lsp, not by the endpoint
    prompt, completion = e.get("prompt_tokens", 0), e.get("completion_tokens", 0)
    return f"{about}{prompt} in / {about}{completion} out tokens"


def _step(e: dict[str, Any]) -> str:
    return f"[{e['step']:>2}] " if isinstance(e.get("step"), int) and e["step"] else ""


def _describe(e: dict[str, Any]) -> str:
    kind = e.get("kind", "?")
    if kind == "session":
        return f"session {e.get('session', '')} started in {e.get('root', '')} (pid {e.get('pid')})"
    if kind == "task_start":
        return f"task {e.get('task_id', '')} {e.get('mode', 'started')}: {e.get('title', '')}"
    if kind == "task_end":
        return (
            f"task {e.get('task_id', '')} {e.get('status', '')} after {e.get('steps', 0)} steps: "
            f"{e.get('summary', '')}"
        )
    if kind == "model_call":
        calls = ", ".join(e.get("tool_calls") or []) or "answer"
        purpose = f" ({e['purpose']})" if e.get("purpose") not in (None, "agent") else ""
        estimated = " (estimated)" if e.get("estimated") else ""
        cut = " [cut at the output cap]" if e.get("finish_reason") == "length" else ""
        said = " ".join(str(e.get("reply") or "").split())
        words = f": {said[:160]}{'…' if len(said) > 160 else ''}" if said else ""
        notes = "".join(f"\n    {n}" for n in e.get("notes") or [])
        return (
            f"model{purpose}: {_tokens(e)}{estimated}, {e.get('latency_ms', 0)} ms -> "
            f"{calls}{cut}{words}{notes}"
        )
    if kind == "tool_call":
        detail = f": {e['error']}" if e.get("error") else ""
        return (
            f"{e.get('tool', '?')} {e.get('arguments', '')[:100]} -> {e.get('status', '?')}"
            f"{detail} ({e.get('duration_ms', 0)} ms)"
        )
    if kind == "command":
        return (
            f"$ {e.get('command', '')}  (in {e.get('cwd', '?')}; {e.get('decided_by', '?')}; "
            f"exit {e.get('exit_code', '-')})"
        )
    if kind == "file_change":
        return f"changed {e.get('path', '?')} ({e.get('tool', '?')})"
    if kind == "memory":
        return f"memory: {e.get('action', '?')} {e.get('path', '')}".rstrip()
    if kind == "tests":
        return f"tests: {e.get('summary', '')}"
    if kind in ("warn", "init"):
        return f"{'WARN ' if kind == 'warn' else ''}{e.get('message', '')}"
    extra = {k: v for k, v in e.items() if k not in ("ts", "kind", "source")}
    return f"{kind} {json.dumps(extra, ensure_ascii=False)[:200]}"


def render(line: str) -> str:
    """One log line, for people."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError:
        return f"(unreadable log line) {line.strip()[:120]}"
    if not isinstance(entry, dict):
        return f"(unreadable log line) {line.strip()[:120]}"
    e: dict[str, Any] = entry
    return f"{_clock(str(e.get('ts', '')))} {e.get('source', '?')!s:<6} {_step(e)}{_describe(e)}"


def follow(
    path: Path, poll: float = 0.2, stop: Callable[[], bool] = lambda: False
) -> Iterator[str]:
    """Every line of `path`, then new lines as they are appended, until `stop()`."""
    offset = 0
    pending = ""
    while True:
        try:
            with path.open(encoding="utf-8", errors="replace") as fh:
                fh.seek(offset)
                chunk = fh.read()
                offset = fh.tell()
        except FileNotFoundError:
            chunk = ""
        pending += chunk
        *lines, pending = pending.split("\n")
        yield from (ln for ln in lines if ln.strip())
        if stop():
            return
        time.sleep(poll)
