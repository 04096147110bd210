"""What a task cost, in one line: wall time, model calls, tool runs, tokens and, where
`[model] price` is set, money. The CLI prints it under the outcome; the editor shows it at the
end of the outcome message and of the task's progress."""

from __future__ import annotations

from agent_lsp.messages import TaskOutcome


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return (
        f"{minutes} min {rest:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def task_totals(outcome: TaskOutcome) -> str:
    """e.g. `12.3 s, 4 model calls, 3 tool runs, tokens: 1200 in, 80 out, cost $0.0002`
    (`≈` and "estimated" where the endpoint reported no usage and tokens were estimated); a
    resumed or continued task's: this run's, as its wall time."""
    usage = outcome.usage if outcome.run_usage is None else outcome.run_usage
    about = "≈" if usage.estimated else ""
    parts = [
        _duration(outcome.seconds),
        _plural(usage.calls, "model call"),
        _plural(outcome.tool_runs, "tool run"),
        f"tokens: {about}{usage.prompt_tokens} in, {about}{usage.completion_tokens} out"
        + (" (estimated)" if usage.estimated else ""),
    ]
    if outcome.cost is not None:
        parts.append(f"cost {about}${outcome.cost:.4f}")
    return ", ".join(parts)
