"""`agent-lsp run --json`: the task as one JSON object per line on stdout, for CI and scripts.

Each line has a `type`: `event` (a step's progress as the terminal shows it), the session
log's records as they are written (`model_call` with its tokens, `tool_call` with its status,
`command`, `tests` with the verdict, `decision` …: the log is the one place they come from),
`edit` (a file changed, with its unified diff), `question` (what was asked and the answer, or
null for none), `warning`, and last `outcome` with the exit code. Questions are asked on the
terminal as `run` asks them (on stderr, so stdout stays JSON); without a terminal, no answer.
Every string is JSON-escaped (control characters as `\\u001b`), so nothing in a line can move a
terminal's cursor."""

from __future__ import annotations

import asyncio
import difflib
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.fileio import atomic_write, read_disk_text
from agent_lsp.messages import AgentEvent, TaskOutcome, TaskStatus

__all__ = ["JsonChannel", "JsonLines", "interrupted_line", "outcome_line"]

MAX_DIFF = 200_000  # characters of one edit's diff (a bigger one is cut, and says so)


class JsonLines:
    """Writes one JSON object per line (thread-safe: the session log writes from threads)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._lock = threading.Lock()
        self.task_id = ""  # the task the session log's records name (an interrupted outcome's)

    def emit(self, type_: str, /, **data: Any) -> None:
        line = json.dumps({"type": type_, **data}, ensure_ascii=True, default=str)
        with self._lock:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (OSError, ValueError):  # stdout closed (a pipe's reader gone): nothing to do
                pass

    def log_record(self, entry: Mapping[str, Any]) -> None:
        """A session log record as a line of its own kind (`model_call`, `tool_call` …)."""
        data = {k: v for k, v in entry.items() if k not in ("kind", "type")}
        if isinstance(task_id := entry.get("task_id"), str) and task_id:
            self.task_id = task_id
        self.emit(str(entry.get("kind", "log")), **data)


class JsonChannel:
    """The terminal's channel, told as JSON lines: edits written to disk like `run` writes
    them, each with its diff; questions asked on the terminal (stderr), answer recorded."""

    def __init__(self, root: Path, lines: JsonLines, asker: TerminalChannel | None = None) -> None:
        self.root = root.resolve()
        self.lines = lines
        self.asker = asker or TerminalChannel(sys.stderr)

    def buffers(self) -> Mapping[Path, str]:
        return {}

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        before = await asyncio.to_thread(_old_text, path)
        await asyncio.to_thread(atomic_write, path, new_text)
        rel = _relative(self.root, path)
        diff = "".join(
            difflib.unified_diff(
                (before or "").splitlines(keepends=True),
                new_text.splitlines(keepends=True),
                f"a/{rel}" if before is not None else "/dev/null",
                f"b/{rel}",
            )
        )
        cut = len(diff) > MAX_DIFF
        self.lines.emit(
            "edit",
            path=rel,
            label=label,
            created=before is None,
            diff=diff[:MAX_DIFF] + ("\n[diff cut]\n" if cut else ""),
        )

    async def report(self, event: AgentEvent) -> None:
        self.lines.emit(
            "event",
            kind=event.kind.value,
            step=event.step,
            message=event.message,
            data=event.data,
        )

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        answer = await self.asker.ask(question, options)
        self.lines.emit("question", question=question, options=list(options), answer=answer)
        return answer

    def close(self) -> None:
        self.asker.close()


def outcome_line(lines: JsonLines, outcome: TaskOutcome, exit_code: int, **more: Any) -> None:
    """The last line: the outcome (and `more`: a team task's plan and tokens by role);
    `verified` only for a task completed and proved by its tests (a task not done is not
    verified, whatever its checks said)."""
    usage = outcome.usage if outcome.run_usage is None else outcome.run_usage
    lines.emit(
        "outcome",
        status=outcome.status.value,
        summary=outcome.summary,
        steps=outcome.steps,
        stop_reason=outcome.stop_reason,
        verified=outcome.verified and outcome.status is TaskStatus.COMPLETED,
        changed_files=list(outcome.changed_files),
        task_id=outcome.task_id,
        seconds=round(outcome.seconds, 3),
        model_calls=usage.calls,
        tool_runs=outcome.tool_runs,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        tokens_estimated=usage.estimated,
        **more,
        exit_code=exit_code,
    )


def interrupted_line(lines: JsonLines, exit_code: int) -> None:
    """The last line of a run cut short by Ctrl-C: its task stays resumable."""
    lines.emit(
        "outcome",
        status="interrupted",
        summary="interrupted; resume with: agent-lsp run --resume",
        task_id=lines.task_id,
        exit_code=exit_code,
    )


def _old_text(path: Path) -> str | None:
    try:
        return read_disk_text(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)
