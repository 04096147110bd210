"""Team mode vs the single agent on the same multi-file work: prompt tokens per role and in
total, and wall time with 1 vs 2 workers.

The project: `--modules` independent Python modules (`m0.py`...), each a stub function with
its own test, pytest configured. The work: implement every stub. The model is
`tests.fakes.openai_server.FakeOpenAIServer` in this process, scripted, each reply after a
fixed latency (`--latency`, 150 ms); the real `openai` client, the real loop and tools, real
pytest.

* single agent (`Session.run_task`): one turn reads every module (parallel tool calls), one
  edits them all, one runs the tests, then it answers: 4 model calls;
* team (`Orchestrator`): the commander writes the task record (1 call), the planner plans one
  step per module (1 call), for each step the editor edits the module (small: its numbered
  lines are in the editor's first message, no retriever call) and answers (2 calls), the
  reviewer answers [] (1 call); the team runs the full suite itself.

Prompt tokens are counted the same way on both sides from what each request carried: 4
characters per token over the messages and the tool schemas (the fake reports that as the
usage, so the team's own per-role totals agree), and split per role into the system prompt,
the tool schemas, the first user message (the context) and the history replayed after it.
Wall time: from the start of the task to its outcome, and of EXECUTING alone (the workers;
the full suite run after it is the same for both), team with `workers=1` and `workers=2`,
alternating, `--rounds` each, median.

With `--memory` the project also has the memory the single agent is given: rules
(`AGENTS.md`), a conventions file (`.agent-lsp/state/project/conventions.md`) and an earlier
experience about these modules (`.agent-lsp/memory/`), so that what each role's request carries
of them is measured (each role gets the parts its context keys name: `team/memory.py`).

Run: `.venv/bin/python bench/team_bench.py [--modules 4] [--latency 0.15] [--rounds 3]
[--memory]`; JSON in `bench/results/team.json` (`team-memory.json` with `--memory`); figures
in `bench/team.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(REPO_ROOT))

from agent_lsp.config.schema import Settings  # noqa: E402
from agent_lsp.models.openai_compat import OpenAICompatModel  # noqa: E402
from agent_lsp.session import Session  # noqa: E402
from agent_lsp.task import Task, TaskKind  # noqa: E402
from agent_lsp.team import Orchestrator  # noqa: E402
from agent_lsp.team.orchestrator import TeamOptions  # noqa: E402
from tests.fakes.channel import RecordingChannel  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall  # noqa: E402

Json = dict[str, Any]
STUB = "    raise NotImplementedError\n"
ROLES = ("commander", "planner", "retriever", "editor", "reviewer")


def tokens_of(request: Json) -> int:
    return len(json.dumps(request.get("messages", [])) + json.dumps(request.get("tools", []))) // 4


PARTS = ("system", "tools", "context", "history")


def breakdown(request: Json) -> dict[str, int]:
    """A request's prompt tokens by part: the system prompt, the tool schemas, the first user
    message (the role's instructions and its context) and the history replayed after it."""
    messages = request.get("messages", [])
    system = [m for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    return {
        "system": len(json.dumps(system)) // 4,
        "tools": len(json.dumps(request.get("tools", []))) // 4,
        "context": len(json.dumps(rest[:1])) // 4,
        "history": len(json.dumps(rest[1:])) // 4,
    }


def first_user(request: Json) -> str:
    return next((m["content"] for m in request["messages"] if m["role"] == "user"), "")


def role_of(request: Json) -> str:
    head = first_user(request)
    for role in ROLES:
        if f"[team role: {role}]" in head:
            return role
    return "single"


def make_project(parent: Path, modules: int) -> Path:
    root = parent / "shop"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "shop"\nversion = "0"\n\n'
        '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n'
    )
    for i in range(modules):
        (root / f"m{i}.py").write_text(f'def f{i}(x):\n    """x times {i + 2}."""\n{STUB}')
        (root / "tests" / f"test_m{i}.py").write_text(
            f"from m{i} import f{i}\n\n\ndef test_f{i}():\n    assert f{i}(3) == {3 * (i + 2)}\n"
        )
    return root


RULES = """# Rules for agents
- Python 3.11; keep functions pure, no I/O in the m*.py modules.
- Every public function has a docstring saying what it returns.
- Run the tests with pytest; never edit a test to make it pass.
"""
CONVENTIONS = """# Conventions
- Multiplications are written `x * n`, the variable first.
- Module names are m<N>.py; each has its test in tests/test_m<N>.py.
"""
EXPERIENCE = """# Implementing the m-module stubs

- date: 2026-11-30
- project: shop
- event: fail-fix-pass
- tags: stubs, modules, multiply
- files: m0.py, m1.py
- symbols: f0, f1

## Goal
Implement the stub functions f0 and f1 of the m modules.

## Steps
1. read m0.py and m1.py
2. replaced the NotImplementedError body with the multiplication

## Key decisions
- x times (i + 2), as each docstring says - the tests check f(3)

## Pitfalls
- the docstring, not the function name, says the factor

## Open questions
-
"""


def add_memory(root: Path) -> None:
    """The memory the single agent is given: rules, a conventions file, an experience."""
    (root / "AGENTS.md").write_text(RULES)
    state = root / ".agent-lsp" / "state" / "project"
    state.mkdir(parents=True)
    (state / "conventions.md").write_text(CONVENTIONS)
    memory = root / ".agent-lsp" / "memory"
    memory.mkdir(parents=True)
    (memory / "2026-11-30--implementing-the-m-module-stubs.md").write_text(EXPERIENCE)


def body(i: int) -> str:
    return f"    return x * {i + 2}\n"


class Scripted:
    """Wraps replies: wait the latency, report the request's size as its usage."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def __call__(self, reply: Reply) -> Any:
        def answer(request: Json) -> Reply:
            time.sleep(self.latency)
            return dataclasses.replace(reply, usage=(tokens_of(request), 20))

        return answer


def script_single(fake: FakeOpenAIServer, modules: int, wrap: Scripted) -> None:
    reads = [ToolCall("read_file", {"path": f"m{i}.py"}) for i in range(modules)]
    edits = [
        ToolCall("edit_file", {"path": f"m{i}.py", "old_text": STUB, "new_text": body(i)})
        for i in range(modules)
    ]
    fake.script(
        wrap(Reply(tool_calls=reads)),
        wrap(Reply(tool_calls=edits)),
        wrap(Reply(tool_calls=[ToolCall("run_tests", {})])),
        wrap(Reply("Implemented every function; the tests pass.")),
    )


def script_team(fake: FakeOpenAIServer, modules: int, wrap: Scripted) -> None:
    steps = [
        {"id": f"s{i}", "goal": f"implement f{i} in m{i}.py", "files": [f"m{i}.py"]}
        for i in range(modules)
    ]
    plan = "```json\n" + json.dumps(steps) + "\n```"
    record = {"type": "feature", "goal": "implement every stub", "problem": "code"}
    fake.script_for(
        "[team role: commander]", wrap(Reply("```json\n" + json.dumps(record) + "\n```"))
    )
    fake.script_for("[team role: planner]", wrap(Reply(plan)))
    for i in range(modules):
        edit = {"path": f"m{i}.py", "old_text": STUB, "new_text": body(i)}
        fake.script_for(  # the module's lines are in the first message: no read_file turn
            f"## Your step\ns{i}:",
            wrap(Reply(tool_calls=[ToolCall("edit_file", edit)])),
            wrap(Reply(f"f{i} implemented")),
        )
    fake.script_for("[team role: reviewer]", wrap(Reply("```json\n[]\n```")))


class TimedChannel(RecordingChannel):
    """Records when the team entered EXECUTING and left it."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: dict[str, float] = {}

    async def report(self, event: Any) -> None:
        message = str(event.message)
        if message.startswith("team: EXECUTING"):
            self.marks.setdefault("executing", time.monotonic())
        elif message.startswith("team: VERIFYING"):
            self.marks.setdefault("verifying", time.monotonic())
        await super().report(event)


def settings_for(base_url: str) -> Settings:
    return Settings.model_validate(
        {"model": {"baseUrl": base_url, "name": "fake", "apiKey": "x", "maxRetries": 0}}
    )


async def run_once(
    mode: str, modules: int, latency: float, workdir: Path, memory: bool = False
) -> Json:
    root = make_project(workdir / f"{mode}-{time.monotonic_ns()}", modules)
    if memory:
        add_memory(root)
    instruction = f"Implement the functions f0..f{modules - 1} (one per module m0..)."
    with FakeOpenAIServer() as fake:
        wrap = Scripted(latency)
        settings = settings_for(fake.base_url)
        session = Session(root, settings, OpenAICompatModel(settings.model))
        channel = TimedChannel()
        started = time.monotonic()
        try:
            if mode == "single":
                script_single(fake, modules, wrap)
                task = Task(kind=TaskKind.TASK, instruction=instruction)
                outcome = await session.run_task(task, channel)
                status, summary = outcome.status.value, outcome.summary
            else:
                script_team(fake, modules, wrap)
                workers = 1 if mode == "team-1" else 2
                team = Orchestrator(session, channel, TeamOptions(workers=workers))
                done = await team.run(instruction)
                status, summary = done.status.value, done.summary
        finally:
            await session.aclose()
        seconds = time.monotonic() - started
        marks = channel.marks
        executing = marks.get("verifying", 0.0) - marks.get("executing", 0.0)
        requests = list(fake.requests)
    ok = all((root / f"m{i}.py").read_text().endswith(body(i)) for i in range(modules))
    per_role: dict[str, int] = {}
    calls: dict[str, int] = {}
    for request in requests:
        role = role_of(request)
        per_role[role] = per_role.get(role, 0) + tokens_of(request)
        calls[role] = calls.get(role, 0) + 1
    first = {role_of(r): tokens_of(r) for r in reversed(requests)}  # each role's first request
    parts: dict[str, dict[str, int]] = {}
    for request in requests:
        into = parts.setdefault(role_of(request), dict.fromkeys(PARTS, 0))
        for part, n in breakdown(request).items():
            into[part] += n
    return {
        "mode": mode,
        "status": status,
        "edits_ok": ok,
        "seconds": round(seconds, 3),
        "executing_seconds": round(executing, 3),
        "prompt_tokens": per_role,
        "total_prompt_tokens": sum(per_role.values()),
        "calls": calls,
        "first_request_tokens": first,
        "parts": parts,
        "summary": summary[:300],
    }


async def main(args: argparse.Namespace) -> Json:
    workdir = Path(tempfile.mkdtemp(prefix="team-bench-"))
    os.environ.pop("OPENAI_API_KEY", None)
    try:
        single = await run_once("single", args.modules, args.latency, workdir, args.memory)
        team = await run_once("team-2", args.modules, args.latency, workdir, args.memory)
        walls: dict[str, list[float]] = {"team-1": [], "team-2": []}
        execs: dict[str, list[float]] = {"team-1": [], "team-2": []}
        for _ in range(args.rounds):
            for mode in ("team-1", "team-2"):
                result = await run_once(mode, args.modules, args.latency, workdir, args.memory)
                assert result["edits_ok"] and result["status"] == "completed", result
                walls[mode].append(result["seconds"])
                execs[mode].append(result["executing_seconds"])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    one, two = statistics.median(walls["team-1"]), statistics.median(walls["team-2"])
    ex1, ex2 = statistics.median(execs["team-1"]), statistics.median(execs["team-2"])
    return {
        "modules": args.modules,
        "latency_s": args.latency,
        "rounds": args.rounds,
        "memory": args.memory,
        "single": single,
        "team": team,
        "team_vs_single_prompt_tokens": round(
            team["total_prompt_tokens"] / single["total_prompt_tokens"], 2
        ),
        "wall_s": {"team-1": walls["team-1"], "team-2": walls["team-2"]},
        "wall_median_s": {"team-1": one, "team-2": two},
        "wall_2_vs_1": round(two / one, 2),
        "executing_s": execs,
        "executing_median_s": {"team-1": ex1, "team-2": ex2},
        "executing_2_vs_1": round(ex2 / ex1, 2),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def report(result: Json) -> str:
    single, team = result["single"], result["team"]
    lines = [
        f"{result['modules']} modules, model latency {result['latency_s'] * 1000:.0f} ms a call, "
        f"load average {' '.join(map(str, result['load_average']))} on {result['cpus']} CPUs",
        "",
        "| run | calls | prompt tokens | by role |",
        "|---|---|---|---|",
        f"| single agent | {sum(single['calls'].values())} | {single['total_prompt_tokens']:,} | |",
        f"| team | {sum(team['calls'].values())} | {team['total_prompt_tokens']:,} | "
        + ", ".join(
            f"{role} {team['prompt_tokens'].get(role, 0):,} ({team['calls'].get(role, 0)} calls)"
            for role in ROLES
        )
        + " |",
        "",
        f"team / single prompt tokens: {result['team_vs_single_prompt_tokens']}x",
        f"first request of each role: {team['first_request_tokens']}; single agent's: "
        f"{single['first_request_tokens']}",
        "",
        "| role | calls | system | tools | context | history |",
        "|---|---|---|---|---|---|",
        *(
            f"| {role} | {calls} | "
            + " | ".join(f"{run['parts'][role][p]:,}" for p in PARTS)
            + " |"
            for run in (single, team)
            for role, calls in run["calls"].items()
        ),
        "",
        f"wall time, median of {result['rounds']}: "
        f"1 worker {result['wall_median_s']['team-1']:.2f} s, "
        f"2 workers {result['wall_median_s']['team-2']:.2f} s: {result['wall_2_vs_1']}x",
        f"EXECUTING alone: 1 worker {result['executing_median_s']['team-1']:.2f} s, "
        f"2 workers {result['executing_median_s']['team-2']:.2f} s: "
        f"{result['executing_2_vs_1']}x",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--modules", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", action="store_true", help="rules, conventions, experience")
    parsed = parser.parse_args()
    outcome = asyncio.run(main(parsed))
    out = BENCH_DIR / "results" / ("team-memory.json" if parsed.memory else "team.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(outcome, indent=1))
    print(report(outcome))
    print(f"JSON in {out}")
