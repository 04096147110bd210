"""Agent tasks through the language server: time to the first model request, harness overhead
per step, and the process tree's memory after tasks; ours vs an older version vs bare pygls.

One run, on a generated git repository of `--files` Python files (plus `agent_lsp`'s demo
sample: `calc.py` with a failing test):

* every version under test (this checkout; `--base DIR`: another checkout, e.g. a
  `git archive` of an older commit, run with its own `PYTHONPATH`) is started as
  `python -m agent_lsp serve`, given the project and `--tasks` times `agentLsp.fix` on the
  sample's failing test, one task after the other;
* the model is `tests/fakes/openai_server.FakeOpenAIServer` in this process, scripted: each task
  makes `--steps` tool calls (read-only tools, varied), then the model fails with an HTTP 400
  (the task ends at once, no test run); every request's arrival is time-stamped;
* (a) time to the first model request: from writing the `workspace/executeCommand` to the
  first chat-completions request arriving at the fake (task 1: cold; tasks 2..: warm);
* (b) harness overhead per step: the time between two model requests of a task minus the
  model call's latency and the tool's duration as the server's session log recorded them
  (`model_call.latency_ms`, `tool_call.duration_ms`): everything but the model and the tool;
* (c) `VmRSS` of the server's process tree: idle (after `initialize`, settled), after task 1
  and after the last task (each 1 s after the task's final message, settled); bare pygls idle.

Run: `.venv/bin/python bench/task_bench.py [--base /tmp/old] [--files 2000] [--tasks 5]`
JSON in `bench/results/task.json`. See `bench/task.md` for the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(BENCH_DIR))

from lsp_client import REAPER, LspClient, tree_memory, wait_quiet  # noqa: E402
from lsp_workloads import initialize_params  # noqa: E402

from tests.fakes.openai_server import Error, FakeOpenAIServer, ScriptEntry, ToolCall  # noqa: E402
from tests.fakes.openai_server import Reply as FakeReply  # noqa: E402

Json = dict[str, Any]
SAMPLE = REPO_ROOT / "agent_lsp" / "demo" / "sample"
DIAGNOSTIC: Json = {
    "range": {"start": {"line": 9, "character": 4}, "end": {"line": 9, "character": 42}},
    "message": "average([2, 4, 6]) returned 3.0, expected 4",
    "source": "pytest",
    "severity": 1,
}
MODULE = '''"""Module {n}: records of area {area}."""

from dataclasses import dataclass


@dataclass
class Record{n}:
    name: str
    size: int = {n}

    def scaled(self, factor: float) -> float:
        return self.size * factor


def load_{n}(items: list[str]) -> list[Record{n}]:
    """Records from names."""
    return [Record{n}(item, len(item)) for item in items]


def total_{n}(records: list[Record{n}]) -> int:
    return sum(r.size for r in records)
'''


class TimedFake(FakeOpenAIServer):
    """The test fake, with every request's arrival time (`time.perf_counter_ns`)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[int] = []
        self.lock = threading.Lock()

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self.lock:
            self.arrivals.append(time.perf_counter_ns())
        super()._record(body, headers)


def tool_cycle(n: int) -> list[ToolCall]:
    """Read-only calls that vary (the loop guard pauses a task repeating one call)."""
    k = n % 2000
    return [
        ToolCall("read_file", {"path": "calc.py"}),
        ToolCall("list_files", {"path": "."}),
        ToolCall("find_symbol", {"name": f"load_{k}"}),
        ToolCall("read_file", {"path": "tests/test_calc.py"}),
        ToolCall("search_text", {"pattern": "def average"}),
        ToolCall("get_diagnostics", {}),
        ToolCall("git_status", {}),
        ToolCall("read_file", {"path": f"src/pkg{k % 40:02d}/mod{k:04d}.py"}),
    ]


def task_script(steps: int, task: int) -> list[ScriptEntry]:
    script: list[ScriptEntry] = []
    for step in range(steps):
        cycle = tool_cycle(task * 101 + step)
        script.append(FakeReply(tool_calls=[cycle[step % len(cycle)]]))
    return [*script, Error(400, "bench: end of the scripted task")]


def make_repo(root: Path, files: int) -> Path:
    project = root / "project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    for n in range(files):
        folder = project / "src" / f"pkg{n % 40:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n:04d}.py").write_text(MODULE.format(n=n, area=n % 40), encoding="utf-8")
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=bench", "-c", "user.email=bench@invalid", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *command], cwd=project, capture_output=True, check=True)
    return project


def server_env(home: Path, base_url: str, pythonpath: Path | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AGENT_LSP_", "XDG_", "GITHUB_", "GH_", "PYTHONPATH"))
    }
    env.update(
        HOME=str(home),
        PYTHONUNBUFFERED="1",
        AGENT_LSP_BASE_URL=base_url,
        AGENT_LSP_API_KEY="x",
        AGENT_LSP_MODEL="fake-model",
    )
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def session_steps(project: Path) -> list[list[tuple[int, int, int]]]:
    """Per task (in order), per step: (step, model latency ms, tool duration ms) from the
    session logs."""
    tasks: list[list[tuple[int, int, int]]] = []
    model: dict[int, int] = {}
    for path in sorted((project / ".agent-lsp").rglob("logs/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            if entry.get("kind") == "model_call" and entry.get("purpose") == "agent":
                step = int(entry["step"])
                if step == 1:
                    tasks.append([])
                model[step] = int(entry["latency_ms"])
            elif entry.get("kind") == "tool_call" and tasks:
                step = int(entry["step"])
                tasks[-1].append((step, model.get(step, 0), int(entry["duration_ms"])))
    return tasks


async def settle(client: LspClient) -> None:
    await wait_quiet(client.pid, 30.0, strict=False)


async def run_version(
    name: str, code: Path, args: argparse.Namespace, tmp: Path, fake: TimedFake
) -> Json:
    project = make_repo(tmp / name, args.files)
    home = tmp / name / "home"
    home.mkdir()
    env = server_env(home, fake.base_url, code)
    argv = [args.python, "-m", "agent_lsp", "serve"]
    client = await LspClient.spawn(name, argv, env, code)
    result: Json = {"code": str(code), "tasks": []}
    try:
        await client.request("initialize", initialize_params(project), args.timeout)
        client.notify("initialized", {})
        await asyncio.sleep(0.2)
        await settle(client)
        result["rss_idle_kib"] = tree_memory(client.pid)["VmRSS"]
        uri = (project / "calc.py").as_uri()
        text = (project / "calc.py").read_text(encoding="utf-8")
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        for task in range(args.tasks):
            fake.script(*task_script(args.steps, task))
            first = len(fake.arrivals)
            shown = len(client.shown)
            sent = time.perf_counter_ns()
            response = await client.request(
                "workspace/executeCommand",
                {"command": "agentLsp.fix", "arguments": [uri, DIAGNOSTIC]},
                args.timeout,
            )
            deadline = time.monotonic() + args.task_timeout
            while len(client.shown) <= shown or not any(
                "agent-lsp: " in s for s in client.shown[shown:]
            ):
                if time.monotonic() > deadline or client.dead:
                    raise RuntimeError(f"{name}: task {task + 1} did not end: {client.dead}")
                await asyncio.sleep(0.02)
            arrivals = fake.arrivals[first:]
            final = next(s for s in client.shown[shown:] if "agent-lsp: " in s)
            await asyncio.sleep(1.0)
            await settle(client)
            memory = tree_memory(client.pid)
            result["tasks"].append(
                {
                    "task_id": (response.result or {}).get("taskId"),
                    "first_request_ms": (arrivals[0] - sent) / 1e6 if arrivals else None,
                    "requests": len(arrivals),
                    "arrivals_ms": [(a - sent) / 1e6 for a in arrivals],
                    "final": final[:300],
                    "rss_kib": memory["VmRSS"],
                    "processes": memory["processes"],
                }
            )
    finally:
        await client.shutdown()
    logged = session_steps(project)
    for task, steps in zip(result["tasks"], logged, strict=False):
        arrivals = task["arrivals_ms"]
        overhead = []
        for step, latency, duration in steps:
            if step < len(arrivals):
                overhead.append(arrivals[step] - arrivals[step - 1] - latency - duration)
        task["overhead_ms"] = overhead
        task["tool_ms"] = [d for _, _, d in steps]
        task["model_ms"] = [m for _, m, _ in steps]
    return result


async def bare_rss(args: argparse.Namespace, tmp: Path) -> int:
    home = tmp / "bare-home"
    home.mkdir()
    env = server_env(home, "http://127.0.0.1:9/v1", None)
    argv = [args.python, str(BENCH_DIR / "bare_server.py")]
    client = await LspClient.spawn("bare", argv, env, REPO_ROOT)
    try:
        await client.request("initialize", initialize_params(tmp), args.timeout)
        client.notify("initialized", {})
        await asyncio.sleep(0.2)
        await settle(client)
        return int(tree_memory(client.pid)["VmRSS"])
    finally:
        await client.shutdown()


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(version: Json) -> Json:
    tasks = version["tasks"]
    warm = [t["first_request_ms"] for t in tasks[1:] if t["first_request_ms"] is not None]
    overhead = [o for t in tasks for o in t.get("overhead_ms", [])]
    return {
        "first_request_cold_ms": tasks[0]["first_request_ms"] if tasks else None,
        "first_request_warm_ms": median(warm),
        "first_request_warm_all_ms": warm,
        "overhead_median_ms": median(overhead),
        "overhead_p90_ms": sorted(overhead)[int(0.9 * (len(overhead) - 1))] if overhead else None,
        "overhead_steps": len(overhead),
        "rss_idle_mib": version["rss_idle_kib"] / 1024,
        "rss_after_1_mib": tasks[0]["rss_kib"] / 1024 if tasks else None,
        "rss_after_last_mib": tasks[-1]["rss_kib"] / 1024 if tasks else None,
        "rss_each_mib": [round(t["rss_kib"] / 1024, 1) for t in tasks],
        "processes_after_last": len(tasks[-1]["processes"]) if tasks else None,
        "final": tasks[-1]["final"] if tasks else None,
    }


def render(results: Json) -> str:
    names = list(results["summary"])

    def cell(value: object, unit: str) -> str:
        if value is None:
            return "-"
        if isinstance(value, int) and not unit:
            return str(value)
        return f"{value:.1f} {unit}" if isinstance(value, float | int) else str(value)

    rows = [
        ("first model request, cold (task 1)", "first_request_cold_ms", "ms"),
        ("first model request, warm (median of tasks 2..)", "first_request_warm_ms", "ms"),
        ("harness overhead per step, median", "overhead_median_ms", "ms"),
        ("harness overhead per step, p90", "overhead_p90_ms", "ms"),
        ("RSS idle, process tree", "rss_idle_mib", "MiB"),
        ("RSS after task 1", "rss_after_1_mib", "MiB"),
        (f"RSS after task {results['config']['tasks']}", "rss_after_last_mib", "MiB"),
        (
            f"processes in the tree after task {results['config']['tasks']}",
            "processes_after_last",
            "",
        ),
    ]
    width = 50
    lines = [
        f"agent tasks on {results['config']['files']} files, {results['config']['steps']} "
        f"steps per task; load average {results['load_start']} at start, "
        f"{results['load_end']} at the end",
        f"{'figure':<{width}}" + "".join(f"{n:>16}" for n in names),
    ]
    for label, key, unit in rows:
        values = "".join(f"{cell(results['summary'][n][key], unit):>16}" for n in names)
        lines.append(f"{label:<{width}}{values}")
    lines.append(f"{'RSS idle, bare pygls':<{width}}{results['bare_rss_kib'] / 1024:>12.1f} MiB")
    for n in names:
        lines.append(
            f"{n}: warm first requests {results['summary'][n]['first_request_warm_all_ms']}"
        )
        lines.append(f"{n}: RSS after each task (MiB) {results['summary'][n]['rss_each_mib']}")
        lines.append(f"{n}: last task's end: {results['summary'][n]['final']}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> Json:
    tmp = Path(tempfile.mkdtemp(prefix="task-bench-"))
    fake = TimedFake().start()
    results: Json = {
        "config": vars(args),
        "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "versions": {},
    }
    try:
        versions = [("ours", REPO_ROOT)]
        if args.base:
            versions.append(("base", Path(args.base).resolve()))
        for name, code in versions:
            results["versions"][name] = await run_version(name, code, args, tmp, fake)
        results["bare_rss_kib"] = await bare_rss(args, tmp)
    finally:
        fake.stop()
        REAPER.kill_all()
        shutil.rmtree(tmp, ignore_errors=True)
    results["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results["summary"] = {n: summarise(v) for n, v in results["versions"].items()}
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=2000, help="generated Python files")
    parser.add_argument("--tasks", type=int, default=5, help="tasks per server, one by one")
    parser.add_argument("--steps", type=int, default=20, help="tool calls per task")
    parser.add_argument("--base", help="another checkout to compare (its own PYTHONPATH)")
    parser.add_argument("--python", default=sys.executable, help="the servers' interpreter")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--task-timeout", type=float, default=180.0, help="seconds per task")
    parser.add_argument("--out", default=str(BENCH_DIR / "results" / "task.json"))
    args = parser.parse_args(argv)
    results = asyncio.run(run(args))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
