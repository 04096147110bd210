"""The `run_command` result of a readiness check: ready or not, after how long, on which port
or line, the output tail, and the exit code when it died first."""

from __future__ import annotations

from typing import Any

from agent_lsp.messages import ToolResult
from agent_lsp.safety.confined import tree_note
from agent_lsp.tools.readiness import Readiness
from agent_lsp.tools.readiness_run import ReadyOutcome

__all__ = ["readiness_result"]

_HINT = (
    "Pass `ready` (the port, or a regex for the line it prints once up) or a longer "
    "`timeout`; `until_ready: false` runs it to completion instead."
)


def readiness_result(
    outcome: ReadyOutcome | None,
    raw: str,
    readiness: Readiness,
    wait: float,
    meta: dict[str, Any],
) -> ToolResult:
    if outcome is None:
        return ToolResult.fail(
            f"started as a readiness check ({readiness.reason}); the check did not finish",
            output=raw,
            **meta,
        )
    meta |= {
        "exit_code": outcome.exit_code,
        "duration": round(outcome.stopped_after, 3),
        "readiness": {
            "status": outcome.status,
            "ready": outcome.ready,
            "ready_after": round(outcome.ready_after, 3),
            "stopped_after": round(outcome.stopped_after, 3),
            "port": outcome.port,
            "line": outcome.line or None,
            "ports_checked": list(readiness.ports),
            "recognised_as": readiness.reason,
            "busy_before": list(outcome.busy),
        },
    }
    how = " (process group killed)" if outcome.killed else " (process group stopped)"
    head = f"started as a readiness check; stopped after {outcome.stopped_after:.1f} s{how}."
    if note := tree_note(raw):  # no sandbox: what it detached (setsid …&) was ended too, or not
        head += f" {note}"
    after = f"after {outcome.ready_after:.1f} s"
    about = f" [{readiness.reason}]"
    output = _tail(outcome)
    if outcome.busy:
        taken = ", ".join(map(str, outcome.busy))
        about += f" Port {taken} was already in use before it started (not counted)."
    if outcome.status == "port":
        text = f"ready {after}: port {outcome.port} accepts connections.{about}"
        return ToolResult.ok(f"{head}\n{text}\n{output}", **meta)
    if outcome.status == "line":
        text = f"ready {after}: it printed {outcome.line!r}.{about}"
        return ToolResult.ok(f"{head}\n{text}\n{output}", **meta)
    if outcome.status == "exited":
        died = f"exited with code {outcome.exit_code} {after}"
        if outcome.exit_code == 0:
            text = f"it {died} by itself: not a long-running command.{about}"
            return ToolResult.ok(f"{head}\n{text}\n{output}", **meta)
        error = f"{head} Not ready: it {died}, before it was ready (see the output).{about}"
        return ToolResult.fail(error, output=output, **meta)
    ports = ", ".join(map(str, readiness.ports))
    looked = [f"no connection on port {ports}"] if ports else []
    looked += ["no ready line"] if readiness.line else []
    error = (
        f"{head} Not ready after {wait:.0f} s ({', '.join(looked) or 'nothing to wait for'})."
        f"{about} {_HINT}"
    )
    return ToolResult.fail(error, output=output, **meta)


def _tail(outcome: ReadyOutcome) -> str:
    text = outcome.output.rstrip("\n")
    if not text:
        return "(no output)"
    cut = f"[{outcome.omitted} bytes of earlier output left out]\n" if outcome.omitted else ""
    return f"--- output (last {len(text.splitlines())} lines) ---\n{cut}{text}"
