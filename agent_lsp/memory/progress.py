"""The harness's own entries in `state/task/current-task.md`: after each step what changed
(files, a one-line gist) and what the tests said (totals, the first failure); the blockers it
saw (a failure that persists, a denied command, a loop-guard pause); the end status. Written
whether or not the model calls `update_task`, so the file always tells where the task is."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from agent_lsp.memory.layout import Layout
from agent_lsp.memory.state import add_task_entry, set_task_outcome
from agent_lsp.messages import TaskOutcome, ToolCall, ToolResult

GIST = 70  # characters of a one-line gist
_FAILED = re.compile(r"^FAILED (\S+)(?: at \S+)?: ?(.*)$", re.M)


def _one_line(text: object, limit: int = GIST) -> str:
    words = " ".join(str(text or "").split())
    return words if len(words) <= limit else words[: limit - 1] + "…"


def first_failure(report_text: str) -> str | None:
    """`test_id (message)` of the first FAILED line of a formatted test report."""
    match = _FAILED.search(report_text or "")
    if match is None:
        return None
    message = _one_line(match.group(2))
    return f"{match.group(1)} ({message})" if message else match.group(1)


def _args(call: ToolCall) -> dict[str, object]:
    try:
        data = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return {str(k): v for k, v in data.items()} if isinstance(data, dict) else {}


def edit_gist(call: ToolCall) -> str:
    """What an edit did, in a line: the first line of the new text, or the size written."""
    args = _args(call)
    if call.name == "write_file":
        lines = str(args.get("content") or "").count("\n") + 1
        return f"written, {lines} lines"
    new = next((ln for ln in str(args.get("new_text") or "").splitlines() if ln.strip()), "")
    return f"now `{_one_line(new)}`" if new else "text removed"


@dataclass
class StepProgress:
    """What one step did, gathered from its tool calls, written when the step is done."""

    changed: dict[str, str] = field(default_factory=dict[str, str])
    tests: str | None = None
    commands: list[str] = field(default_factory=list[str])
    blockers: list[str] = field(default_factory=list[str])

    def line(self, step: int) -> str | None:
        parts: list[str] = []
        if self.changed:
            parts.append("changed " + "; ".join(f"{p} ({g})" for p, g in self.changed.items()))
        parts.extend(self.commands)
        if self.tests:
            parts.append(self.tests)
        return f"- step {step}: " + "; ".join(parts) if parts else None


class ProgressRecorder:
    """Keeps the harness's part of the task file; a write that fails is reported once by the
    caller (`on_error`), never raised into the task."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.step = StepProgress()
        self._last_failure: tuple[str, int] | None = None  # first failure, since step

    def tool(self, step: int, call: ToolCall, result: ToolResult) -> None:
        meta = result.metadata
        if call.name == "run_tests" and "ok" in meta:
            self.tests(step, bool(meta["ok"]), _totals(meta), result.output)
        elif call.name == "run_command":
            command = _one_line(_args(call).get("command"), 60)
            decided = str(meta.get("decided_by") or "")
            if result.error and result.error.startswith("not run"):
                self.step.blockers.append(f"- step {step}: command `{command}` denied ({decided})")
            elif "exit_code" in meta:
                self.step.commands.append(f"ran `{command}` (exit {meta['exit_code']})")

    def changed(self, rel: str, call: ToolCall) -> None:
        self.step.changed[rel] = edit_gist(call)

    def tests(self, step: int, ok: bool, totals: str, report_text: str = "") -> None:
        failure = None if ok else first_failure(report_text)
        said = f"tests: {totals}" + (f", first failure: {failure}" if failure else "")
        self.step.tests = said
        if failure is None:
            self._last_failure = None
            return
        name = failure.split(" (")[0]
        if self._last_failure is not None and self._last_failure[0] == name:
            since = self._last_failure[1]
            self.step.blockers.append(f"- step {step}: {name} still fails (since step {since})")
        else:
            self._last_failure = (name, step)

    def flush(self, step: int) -> None:
        """Write this step's entry and blockers (nothing for a step that did nothing)."""
        done, self.step = self.step, StepProgress()
        if (line := done.line(step)) is not None:
            add_task_entry(self.layout, "progress", line)
        for blocker in dict.fromkeys(done.blockers):
            add_task_entry(self.layout, "blockers", blocker)

    def finish(self, outcome: TaskOutcome) -> None:
        if outcome.stop_reason == "loop":
            add_task_entry(
                self.layout, "blockers", f"- step {outcome.steps}: {_one_line(outcome.summary)}"
            )
        verified = "" if outcome.verified else ", unverified"
        files = ", ".join(outcome.changed_files) or "none"
        set_task_outcome(
            self.layout,
            f"{outcome.status.value} after {outcome.steps} steps ({outcome.stop_reason}"
            f"{verified}); files changed: {files}\n{_one_line(outcome.summary, 600)}",
        )


def _totals(meta: dict[str, object]) -> str:
    return ", ".join(f"{meta.get(k, 0)} {k}" for k in ("passed", "failed", "errors", "skipped"))
