"""How a run is classified and how runs become the tables of bench/effect.md."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

FAILURES = (
    "tests changed",
    "timeout",
    "error",
    "loop",
    "malformed",
    "budget",
    "no edit",
    "wrong edit",
)


@dataclass
class RunRecord:
    harness: str
    task: str
    repeat: int
    solved: bool
    failure: str | None  # one of FAILURES, None when solved
    ended: str  # how the harness ended, in the bench's words (harnesses.RunEnd.ended)
    detail: str
    exit_code: int | None
    malformed: int
    steps: int | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    estimated: bool  # some of the tokens are estimates (streamed replies without usage)
    seconds: float
    drain_seconds: float = 0.0  # after the run: the server finishing a request it left
    changed: list[str] = field(default_factory=list[str])
    protected: list[str] = field(default_factory=list[str])
    tests_output: str = ""
    log: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def failure_kind(
    solved: bool, protected_changed: bool, sources_changed: bool, ended: str, malformed: int
) -> str | None:
    """How a failed run ended (None: it did not fail). A changed test file fails a run even
    when its tests pass; the harness's own end comes next; then what the files show."""
    if protected_changed:
        return "tests changed"
    if solved:
        return None
    if ended in ("timeout", "error", "loop", "budget"):
        if ended == "budget" and malformed and not sources_changed:
            return "malformed"  # the budget went on calls that could not run
        return ended
    if ended == "malformed" or (malformed and not sources_changed):
        return "malformed"
    if not sources_changed:
        return "no edit"
    return "wrong edit"


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


@dataclass
class HarnessSummary:
    harness: str
    runs: int
    solved: int
    tasks: int
    tasks_solved: float  # per task: the share of its repeats solved, summed
    prompt_per_run: float  # medians over runs
    completion_per_run: float
    tokens_per_solved: float | None  # all tokens of all runs / solved runs
    calls_per_run: float
    seconds_per_run: float
    estimated: bool
    failures: dict[str, int]
    rounds: list[int] = field(default_factory=list[int])  # solved in each round of every task


def summarize(records: Sequence[RunRecord]) -> list[HarnessSummary]:
    out: list[HarnessSummary] = []
    for harness in dict.fromkeys(r.harness for r in records):
        mine = [r for r in records if r.harness == harness]
        tasks = list(dict.fromkeys(r.task for r in mine))
        solved = sum(r.solved for r in mine)
        total_tokens = sum(r.prompt_tokens + r.completion_tokens for r in mine)
        shares = [
            sum(r.solved for r in mine if r.task == task)
            / max(1, sum(1 for r in mine if r.task == task))
            for task in tasks
        ]
        rounds = [
            sum(r.solved for r in mine if r.repeat == n)
            for n in sorted({r.repeat for r in mine})
            if {r.task for r in mine if r.repeat == n} == set(tasks)  # a round stopped: left out
        ]
        failures: dict[str, int] = {}
        for r in mine:
            if r.failure:
                failures[r.failure] = failures.get(r.failure, 0) + 1
        out.append(
            HarnessSummary(
                harness=harness,
                runs=len(mine),
                solved=solved,
                tasks=len(tasks),
                tasks_solved=sum(shares),
                prompt_per_run=_median([r.prompt_tokens for r in mine]),
                completion_per_run=_median([r.completion_tokens for r in mine]),
                tokens_per_solved=total_tokens / solved if solved else None,
                calls_per_run=_median([r.calls for r in mine]),
                seconds_per_run=_median([r.seconds for r in mine]),
                estimated=any(r.estimated for r in mine),
                failures=failures,
                rounds=rounds,
            )
        )
    return out


def _n(value: float) -> str:
    return f"{value:,.0f}"


def harness_table(summaries: Sequence[HarnessSummary]) -> str:
    rows = [
        "| harness | solved | tokens in / run | tokens out / run | tokens / solved run "
        "| model calls / run | wall s / run | failures |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in summaries:
        mark = "~" if s.estimated else ""
        solved = f"{s.solved} / {s.runs}"
        if s.runs != s.tasks:
            solved += f" ({s.tasks_solved:.1f} of {s.tasks} tasks)"
        if len(s.rounds) > 1:
            median = f"{_median(s.rounds):g}"
            solved += f"; by round {', '.join(map(str, s.rounds))}, median {median}"
        per_solved = f"{mark}{_n(s.tokens_per_solved)}" if s.tokens_per_solved else "-"
        failures = (
            ", ".join(
                f"{k} {v}"
                for k, v in sorted(s.failures.items(), key=lambda kv: FAILURES.index(kv[0]))
            )
            or "-"
        )
        rows.append(
            f"| {s.harness} | {solved} | {mark}{_n(s.prompt_per_run)} | "
            f"{mark}{_n(s.completion_per_run)} | {per_solved} | {s.calls_per_run:g} | "
            f"{s.seconds_per_run:.0f} | {failures} |"
        )
    return "\n".join(rows)


def task_table(records: Sequence[RunRecord]) -> str:
    harnesses = list(dict.fromkeys(r.harness for r in records))
    tasks = list(dict.fromkeys(r.task for r in records))
    rows = ["| task | " + " | ".join(harnesses) + " |", "| --- |" + " --- |" * len(harnesses)]
    for task in tasks:
        cells: list[str] = []
        for harness in harnesses:
            runs = [r for r in records if r.task == task and r.harness == harness]
            if not runs:
                cells.append("")
                continue
            solved = sum(r.solved for r in runs)
            calls = _median([r.calls for r in runs])
            tokens = _median([r.prompt_tokens + r.completion_tokens for r in runs])
            mark = "~" if any(r.estimated for r in runs) else ""
            verdict = (
                "solved"
                if solved == len(runs)
                else ", ".join(sorted({r.failure or "solved" for r in runs}))
            )
            if len(runs) > 1:
                verdict = f"{solved}/{len(runs)}: {verdict}"
            seconds = _median([r.seconds for r in runs])
            cells.append(f"{verdict} ({calls:g} calls, {mark}{_n(tokens)} tok, {seconds:.0f} s)")
        rows.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
