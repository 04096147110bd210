"""Benchmark agent-lsp's language server side by side with a bare pygls server and GitHub
Copilot's language server, and agent-lsp's proxy mode against the server it wraps, in one run.

Figures (see bench/README.md): start-up to the `initialize` response; idle resident memory with a
big buffer open; textDocument/codeAction latency (median, p99) with 5,000- and 20,000-line
buffers, idle and while an agent task runs in our server (a fake OpenAI-compatible model keeps
the task busy with tool rounds); the answer to the `agentLsp.fix` that starts a task and the
codeActions of its first second; incremental didChange throughput on the 20,000-line buffer;
per-message overhead of `agent-lsp serve --wrap -- pylsp` against pylsp alone (hover and
codeAction round trips); the import-time difference between ours and the bare server; with
`--profile`, where our server spends the time (py-spy samples and event-loop stalls).

The servers are driven by the asyncio JSON-RPC client in `lsp_client.py`; every wait has a
timeout and every process group a run started is killed at the end, also on errors and Ctrl+C.

Run: `bench/run.sh` (or `.venv/bin/python bench/lsp_bench.py --help`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from lsp_client import (
    CLOCK_TICKS,
    REAPER,
    LspClient,
    Response,
    ServerError,
    cpu_ticks,
    tree_memory,
    wait_quiet,
)
from lsp_profile import PySpy, ensure_py_spy, read_stalls, summarize_stacks, summarize_stalls
from lsp_workloads import (
    code_action_params,
    did_change,
    generate_python,
    hover_positions,
    initialize_params,
    insert_plan,
)

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_PATH = BENCH_DIR / "results" / "lsp.json"
SAMPLE_PROJECT = REPO_ROOT / "agent_lsp" / "demo" / "sample"

OURS, BARE, COPILOT = "ours", "bare", "copilot"
DIRECT, PROXY = "pylsp", "proxy"
FLOOR = "floor"  # the bare server with a no-op document store (didChange runs only)
LABELS = {
    OURS: "ours",
    BARE: "bare pygls",
    COPILOT: "Copilot",
    DIRECT: "pylsp",
    PROXY: "agent-lsp --wrap pylsp",
    FLOOR: "bare pygls, no document store",
}
COPILOT_PACKAGE = "@github/copilot-language-server"
COPILOT_VERSION = "1.539.0"
NO_MODEL_URL = "http://127.0.0.1:9/v1"  # discard port: nothing listens, nothing is contacted
CANCEL_TITLE = "Cancel agent task"

# The targets of the issue; `met()` compares against them.
TARGET_TASK_P99_MS = 5.0
TARGET_EDITS_PER_S = 1000.0
TARGET_STARTUP_RATIO = 1.2
TARGET_IDLE_RSS_KIB = 80 * 1000 * 1000 / 1024  # 80 MB = 76.3 MiB
TARGET_FIRST_COMMAND_MS = 20.0  # the answer to the executeCommand that starts a task
TARGET_FIRST_CODE_ACTION_MS = 30.0  # the worst codeAction in the task's first second

Json = dict[str, Any]

# The failing test of the sample project, as a test runner would report it.
FIX_DIAGNOSTIC: Json = {
    "range": {"start": {"line": 9, "character": 4}, "end": {"line": 9, "character": 42}},
    "message": "average([2, 4, 6]) returned 3.0, expected 4",
    "source": "pytest",
    "severity": 1,
}


# --------------------------------------------------------------------------- set-up


@dataclass(frozen=True)
class Setup:
    python: str
    tmp: Path
    home: Path
    root: Path
    env: dict[str, str]
    copilot: tuple[str, ...] | None  # argv, or None when it is not available
    copilot_note: str
    pylsp: str | None
    args: argparse.Namespace
    servers: tuple[str, ...] = field(default=(OURS, BARE))

    @property
    def timeout(self) -> float:
        return float(self.args.timeout)

    def argv(self, which: str) -> list[str]:
        if which == OURS:
            return [self.python, "-m", "agent_lsp", "serve"]
        if which == BARE:
            return [self.python, str(BENCH_DIR / "bare_server.py")]
        if which == FLOOR:
            return [self.python, str(BENCH_DIR / "bare_server.py"), "--no-document-store"]
        if which == COPILOT and self.copilot is not None:
            return list(self.copilot)
        if which == DIRECT and self.pylsp is not None:
            return [self.pylsp]
        if which == PROXY and self.pylsp is not None:
            return [self.python, "-m", "agent_lsp", "serve", "--wrap", "--", self.pylsp]
        raise ValueError(f"no command for {which}")


async def spawn(
    setup: Setup, which: str, env: dict[str, str] | None = None, argv: list[str] | None = None
) -> LspClient:
    # cwd = the repository for our Python servers (`python -m agent_lsp` imports the checkout);
    # pylsp, alone or behind the proxy, runs in the project (its formatters read the config there).
    cwd = setup.root if which in (COPILOT, DIRECT, PROXY) else REPO_ROOT
    return await LspClient.spawn(which, argv or setup.argv(which), env or setup.env, cwd)


@contextlib.asynccontextmanager
async def sessions(
    setup: Setup, names: Sequence[str], env: dict[str, dict[str, str]] | None = None
) -> AsyncGenerator[dict[str, LspClient]]:
    """Spawned clients by name; all shut down (and their process groups killed) on exit."""
    clients: dict[str, LspClient] = {}
    try:
        for name in names:
            clients[name] = await spawn(setup, name, (env or {}).get(name))
        yield clients
    finally:
        await asyncio.gather(
            *(client.shutdown() for client in clients.values()), return_exceptions=True
        )


async def open_session(
    client: LspClient,
    root: Path,
    setup: Setup,
    documents: Sequence[tuple[str, str]] = (),
    options: Json | None = None,
) -> Response:
    """initialize + initialized + didOpen of each (uri, text); the initialize response."""
    params = initialize_params(root)
    if options is not None:
        params["initializationOptions"] = options
    response = await client.request("initialize", params, setup.timeout)
    client.notify("initialized", {})
    for uri, text in documents:
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
    return response


async def settle(client: LspClient, setup: Setup) -> bool:
    """Wait until the server's process tree is idle (Copilot may never be: then go on)."""
    strict = client.name in (OURS, BARE, FLOOR)
    return await wait_quiet(client.pid, 20.0 if strict else 10.0, strict=strict)


def rotate(names: Sequence[str], k: int) -> list[str]:
    """The k-th rotation: which server goes first changes every round."""
    k %= len(names)
    return [*names[k:], *names[:k]]


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 1,000 samples is the 990th smallest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def summary(values: Sequence[float], raw: bool = False) -> Json:
    result: Json = {
        "n": len(values),
        "median": statistics.median(values),
        "mean": statistics.fmean(values),
        "min": min(values),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": max(values),
    }
    if raw:
        result["samples"] = [round(v, 4) for v in values]
    return result


def _progress(text: str) -> None:
    print(f"[lsp-bench] {text}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- Copilot


def ensure_copilot(cache: Path, version: str) -> tuple[tuple[str, ...] | None, str]:
    """`node <package>/dist/language-server.js --stdio`, npm-installed into `cache` if needed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None:
        return None, "node is not installed"
    folder = cache / f"copilot-language-server-{version}"
    package = folder / "node_modules" / "@github" / "copilot-language-server"
    if not (package / "package.json").exists():
        if npm is None:
            return None, "npm is not installed"
        _progress(f"installing {COPILOT_PACKAGE}@{version} into {folder} ...")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text('{"private": true}\n')  # npm stays in this folder
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", f"{COPILOT_PACKAGE}@{version}"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None, "npm install timed out"
        if done.returncode != 0 or not (package / "package.json").exists():
            return None, f"npm install failed: {(done.stderr or done.stdout)[-300:].strip()}"
    manifest = json.loads((package / "package.json").read_text())
    bin_field = manifest.get("bin") or {}
    declared = bin_field.get("copilot-language-server") if isinstance(bin_field, dict) else None
    candidates = [package / "dist" / "language-server.js"]
    if isinstance(declared, str):  # "../dist/language-server.js": relative to the package's bin
        candidates.insert(0, (package / "bin" / declared).resolve())
    for script in candidates:
        if script.is_file():
            return (node, str(script), "--stdio"), f"{COPILOT_PACKAGE}@{manifest.get('version')}"
    return None, f"no language-server.js in {package}"


# --------------------------------------------------------------------------- start-up


async def start_once(setup: Setup, which: str) -> tuple[float, float]:
    """Milliseconds from spawning the process to reading its `initialize` response, and to
    reading the answer to a codeAction sent right after `initialized` (what an editor that opens
    a file at once waits for: work deferred to `initialized` shows here)."""
    client = await spawn(setup, which)
    try:
        response = await client.request(
            "initialize", initialize_params(setup.root), timeout=setup.timeout
        )
        client.notify("initialized", {})
        first = await client.request(
            "textDocument/codeAction", _first_action(setup), setup.timeout, check=False
        )
        return (
            (response.received_ns - client.spawned_ns) / 1e6,
            (first.received_ns - client.spawned_ns) / 1e6,
        )
    finally:
        await client.kill()


def _first_action(setup: Setup) -> Json:
    path = setup.root / f"big_{setup.args.sizes[0]}.py"
    return code_action_params(path.read_text(encoding="utf-8"), path.as_uri(), 1, seed=1)[0]


async def interpreter_floor(setup: Setup, runs: int) -> float:
    """Median milliseconds to spawn `python -c pass` and see it exit: the floor of any start-up."""
    samples: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        proc = await asyncio.create_subprocess_exec(setup.python, "-c", "pass", env=setup.env)
        try:
            await asyncio.wait_for(proc.wait(), setup.timeout)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(samples)


async def measure_startup(setup: Setup) -> Json:
    """Alternating spawns; Copilot (slow to start) only in the first `--copilot-startup-runs`."""
    for which in setup.servers:  # warm the page cache and the .pyc files; not measured
        await start_once(setup, which)
    samples: dict[str, list[float]] = {which: [] for which in setup.servers}
    first: dict[str, list[float]] = {which: [] for which in setup.servers}
    for run in range(setup.args.startup_runs):
        for which in rotate(setup.servers, run):
            if which == COPILOT and run >= setup.args.copilot_startup_runs:
                continue
            initialized, answered = await start_once(setup, which)
            samples[which].append(initialized)
            first[which].append(answered)
    result: Json = {which: summary(values, raw=True) for which, values in samples.items()}
    for which in setup.servers:
        result[which]["ratio_to_bare"] = result[which]["median"] / result[BARE]["median"]
    result["ratio_median"] = result[OURS]["ratio_to_bare"]
    result["first_code_action_ms"] = {
        which: summary(values, raw=True) for which, values in first.items()
    }
    result["first_code_action_ms"]["ratio_median"] = (
        result["first_code_action_ms"][OURS]["median"]
        / result["first_code_action_ms"][BARE]["median"]
    )
    result["interpreter_floor_ms"] = await interpreter_floor(setup, setup.args.startup_runs)
    return result


# --------------------------------------------------------------------------- idle buffer


async def measure_buffer(setup: Setup, n_lines: int) -> Json:
    """Fresh sessions with an `n_lines` buffer: RSS (process tree) and idle codeAction latency.

    Copilot has no codeAction handler: it answers "Method not found"; that round trip is what
    is timed for it (its message loop, not a feature)."""
    path = setup.root / f"big_{n_lines}.py"
    text = generate_python(n_lines)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    plan = code_action_params(text, uri, setup.args.warmup + setup.args.requests, seed=n_lines)
    async with sessions(setup, setup.servers) as clients:
        for client in clients.values():  # booted (imports done) before timing `initialize`
            await settle(client, setup)
        rss_init: dict[str, Json] = {}
        initialize_ms: dict[str, float] = {}
        for which, client in clients.items():
            response = await open_session(client, setup.root, setup)
            initialize_ms[which] = response.elapsed_ms
            await asyncio.sleep(0.2)
            rss_init[which] = tree_memory(client.pid)
            client.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
            )
        await asyncio.sleep(setup.args.idle)
        for client in clients.values():
            await settle(client, setup)
        rss_idle = {which: tree_memory(client.pid) for which, client in clients.items()}

        latencies: dict[str, list[float]] = {which: [] for which in clients}
        answers: dict[str, Json] = {which: {"actions": 0, "errors": {}} for which in clients}
        for k, params in enumerate(plan):
            for which in rotate(list(clients), k):  # strictly one request in flight
                response = await clients[which].request(
                    "textDocument/codeAction", params, setup.timeout, check=which != COPILOT
                )
                _count_answer(answers[which], which, response)
                if k >= setup.args.warmup:
                    latencies[which].append(response.elapsed_ms)
        rss_after = {which: tree_memory(client.pid) for which, client in clients.items()}

    stats = {which: summary(values, raw=True) for which, values in latencies.items()}
    return {
        "lines": n_lines,
        "bytes": len(text.encode()),
        "initialize_on_booted_server_ms": initialize_ms,
        "rss_after_initialize_kib": _rss(rss_init),
        "rss_idle_kib": _rss(rss_idle),
        "rss_after_requests_kib": _rss(rss_after),
        "memory_idle": rss_idle,
        "code_action_ms": {
            **stats,
            "ratio_median": stats[OURS]["median"] / stats[BARE]["median"],
            "ratio_p99": stats[OURS]["p99"] / stats[BARE]["p99"],
        },
        "answers": answers,
    }


def _count_answer(tally: Json, which: str, response: Response) -> None:
    if response.error is not None:
        code = str(response.error.get("code"))
        tally["errors"][code] = tally["errors"].get(code, 0) + 1
        tally["error_message"] = str(response.error.get("message", ""))[:120]
    elif isinstance(response.result, list) and response.result:
        tally["actions"] += len(response.result)
    elif which != COPILOT:
        raise ServerError(f"{which}: no code action returned: {response.result!r}")


def _rss(memory: dict[str, Json]) -> Json:
    values: Json = {which: entry["VmRSS"] for which, entry in memory.items()}
    values["ratio"] = values[OURS] / values[BARE]
    return values


async def measure_buffers(setup: Setup) -> list[Json]:
    return [await measure_buffer(setup, n_lines) for n_lines in setup.args.sizes]


# --------------------------------------------------------------------------- agent task running


@dataclass
class FakeModel:
    """`fake_model.py` in a child process: an OpenAI-compatible endpoint that keeps a task busy."""

    proc: asyncio.subprocess.Process
    base_url: str

    @classmethod
    async def start(cls, setup: Setup, big_file: str) -> FakeModel:
        proc = await asyncio.create_subprocess_exec(
            setup.python,
            str(BENCH_DIR / "fake_model.py"),
            "--rounds",
            str(setup.args.task_rounds),
            "--delay",
            str(setup.args.task_model_delay),
            "--big-file",
            big_file,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=REPO_ROOT,
            start_new_session=True,
        )
        REAPER.add(proc.pid, "fake model")
        model = cls(proc, "")
        model.base_url = str((await model._line())["base_url"])
        return model

    async def _line(self) -> Json:
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 15)
        except TimeoutError:
            raise ServerError("fake model: no answer within 15 s") from None
        if not line:
            raise ServerError("fake model: exited")
        return json.loads(line)

    async def stats(self) -> Json:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"stats\n")
        return await self._line()

    async def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        REAPER.discard(self.proc.pid)


def make_task_project(setup: Setup, n_lines: int) -> tuple[Path, Path, str]:
    """A copy of the demo's sample project (a git repository) with the big buffer added."""
    project = setup.tmp / "task-project"
    if project.exists():
        shutil.rmtree(project)
    shutil.copytree(SAMPLE_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    text = generate_python(n_lines)
    big = project / f"big_{n_lines}.py"
    big.write_text(text, encoding="utf-8")
    git = shutil.which("git")
    if git is not None:
        for command in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.name=bench", "-c", "user.email=bench@invalid", "commit", "-qm", "init"],
        ):
            subprocess.run(
                [git, *command], cwd=project, capture_output=True, timeout=30, check=False
            )
    return project, big, text


async def start_fix_task(ours: LspClient, project: Path, setup: Setup) -> str:
    """`workspace/executeCommand agentLsp.fix` on the sample's failing test; the task id."""
    response = await ours.request(
        "workspace/executeCommand",
        {"command": "agentLsp.fix", "arguments": [(project / "calc.py").as_uri(), FIX_DIAGNOSTIC]},
        setup.timeout,
    )
    result = response.result if isinstance(response.result, dict) else {}
    if "taskId" not in result:
        raise ServerError(f"ours: agentLsp.fix did not start a task: {response.result!r}")
    return str(result["taskId"])


async def stop_task(ours: LspClient, task_id: str, setup: Setup) -> str:
    await ours.request(
        "workspace/executeCommand",
        {"command": "agentLsp.cancel", "arguments": [{"taskId": task_id}]},
        setup.timeout,
    )
    try:
        return await ours.wait_shown("agent-lsp: ", 10)
    except ServerError:
        return "(no final message within 10 s)"


async def paced_code_actions(
    clients: dict[str, LspClient], plan: Sequence[Json], setup: Setup
) -> tuple[dict[str, list[float]], dict[str, Json], int]:
    """Code actions round-robin (one in flight), `--pace-ms` apart; also how many of ours'
    answers offered "Cancel agent task" (i.e. the task was running)."""
    latencies: dict[str, list[float]] = {which: [] for which in clients}
    answers: dict[str, Json] = {which: {"actions": 0, "errors": {}} for which in clients}
    running = 0
    pace = setup.args.pace_ms / 1000
    for k, params in enumerate(plan):
        for which in rotate(list(clients), k):
            response = await clients[which].request(
                "textDocument/codeAction", params, setup.timeout, check=which != COPILOT
            )
            _count_answer(answers[which], which, response)
            if k >= setup.args.warmup:
                latencies[which].append(response.elapsed_ms)
            if which == OURS and k >= setup.args.warmup and isinstance(response.result, list):
                running += any(
                    isinstance(a, dict) and a.get("title") == CANCEL_TITLE for a in response.result
                )
        await asyncio.sleep(pace)
    return latencies, answers, running


async def measure_task(setup: Setup, profile: Json | None = None) -> Json:
    """codeAction latency on the 20,000-line buffer while ours runs an agent task.

    With `profile` (a dict to fill), only ours runs, under `loop_probe.py` and py-spy."""
    n_lines = setup.args.task_lines
    project, big, text = make_task_project(setup, n_lines)
    uri = big.as_uri()
    plan = code_action_params(text, uri, setup.args.warmup + setup.args.task_requests, seed=7)
    model = await FakeModel.start(setup, big.name)
    try:
        ours_env = {
            **setup.env,
            "AGENT_LSP_BASE_URL": model.base_url,
            "AGENT_LSP_API_KEY": "x",
            "AGENT_LSP_MODEL": "fake-model",
        }
        names = [OURS] if profile is not None else list(setup.servers)
        stall_log = setup.tmp / "stalls.jsonl"
        if profile is not None:
            ours_env["LSP_BENCH_STALL_LOG"] = str(stall_log)
            ours_env["LSP_BENCH_STALL_MS"] = str(setup.args.stall_ms)
        async with contextlib.AsyncExitStack() as stack:
            clients: dict[str, LspClient] = {}
            for which in names:
                argv = None
                if profile is not None:
                    argv = [setup.python, str(BENCH_DIR / "loop_probe.py"), "serve"]
                env = ours_env if which == OURS else setup.env
                client = await spawn(setup, which, env, argv)
                stack.push_async_callback(client.shutdown)
                clients[which] = client
            options = {"maxSteps": 500}
            for which, client in clients.items():
                await open_session(
                    client, project, setup, [(uri, text)], options if which == OURS else None
                )
            for client in clients.values():
                await settle(client, setup)
            ours = clients[OURS]
            spy = None
            if profile is not None:
                spy = await PySpy.attach(
                    profile["py_spy"], ours.pid, setup.tmp / "task.folded", setup.args.spy_rate
                )
            before = await model.stats()
            log_at = stall_log.stat().st_size if stall_log.exists() else 0
            cpu0, t0 = cpu_ticks(ours.pid, children=True), time.perf_counter()
            task_id = await start_fix_task(ours, project, setup)
            latencies, answers, running = await paced_code_actions(clients, plan, setup)
            window_s = time.perf_counter() - t0
            cpu_s = (cpu_ticks(ours.pid, children=True) - cpu0) / CLOCK_TICKS
            log_end = stall_log.stat().st_size if stall_log.exists() else 0
            after = await model.stats()
            if spy is not None and profile is not None:
                profile["py_spy_stderr"] = (await spy.stop())[-500:]
            final = await stop_task(ours, task_id, setup)
            await asyncio.sleep(setup.args.idle)
            memory = {which: tree_memory(client.pid) for which, client in clients.items()}
    finally:
        await model.stop()

    stats = {which: summary(values, raw=True) for which, values in latencies.items()}
    result: Json = {
        "lines": n_lines,
        "project": "agent_lsp/demo/sample + the generated buffer, git repository",
        "pace_ms": setup.args.pace_ms,
        "window_s": window_s,
        "ours_cpu_s": cpu_s,
        "ours_cpu_share": cpu_s / window_s,
        "model_turns_in_window": after["requests"] - before["requests"],
        "model_script_left": after["remaining"],
        "tool_results": after.get("tool_results", {}),
        "ours_answers_with_task_running": running,
        "final_message": final,
        "rss_after_task_kib": {which: entry["VmRSS"] for which, entry in memory.items()},
        "peak_rss_kib": {which: entry["VmHWM"] for which, entry in memory.items()},
        "memory_after_task": memory,
        "code_action_ms": stats,
        "answers": answers,
    }
    if BARE in stats:
        result["code_action_ms"]["ratio_median"] = stats[OURS]["median"] / stats[BARE]["median"]
        result["code_action_ms"]["ratio_p99"] = stats[OURS]["p99"] / stats[BARE]["p99"]
    if profile is not None:
        everything = read_stalls(stall_log, log_at, log_end)
        window = [e for e in everything if "gc" not in e]
        collections = [e for e in everything if "gc" in e]
        profile["gc_pauses"] = {
            "count": len(collections),
            "total_ms": round(sum(e["ms"] for e in collections), 1),
            "max_ms": max((e["ms"] for e in collections), default=0.0),
            "by_generation": {
                str(g): sum(1 for e in collections if e["gc"] == g) for g in (0, 1, 2)
            },
        }
        profile["stalls"] = summarize_stalls([e for e in window if _on_server_loop(e)])
        profile["agent_loop_stalls"] = summarize_stalls(
            [e for e in window if not _on_server_loop(e)]
        )
        early = [
            e for e in read_stalls(stall_log, 0, log_at) if "gc" not in e and _on_server_loop(e)
        ]
        profile["stalls_before_window"] = summarize_stalls(early)
        profile["samples"] = summarize_stacks(setup.tmp / "task.folded")
    return result


def _on_server_loop(entry: Json) -> bool:
    """A callback of the server's own loop (the main thread), not of the agent thread's."""
    return entry.get("thread", "MainThread") == "MainThread"


# --------------------------------------------------------------------------- a task's first second


async def first_second(
    client: LspClient, project: Path, plan: Sequence[Json], setup: Setup
) -> Json:
    """`workspace/executeCommand agentLsp.fix`, a codeAction written right behind it, then
    codeActions `--pace-ms` apart until a second has passed since the command (and it is
    answered): the command's answer time, the first codeAction's, the worst one's."""
    params = {
        "command": "agentLsp.fix",
        "arguments": [(project / "calc.py").as_uri(), FIX_DIAGNOSTIC],
    }
    sent = time.perf_counter()
    command = asyncio.ensure_future(
        client.request("workspace/executeCommand", params, setup.timeout)
    )
    await asyncio.sleep(0)  # the command is written first
    latencies: list[float] = []
    pace = setup.args.pace_ms / 1000
    while len(latencies) < len(plan):
        response = await client.request(
            "textDocument/codeAction", plan[len(latencies)], setup.timeout
        )
        latencies.append(response.elapsed_ms)
        if time.perf_counter() - sent >= 1.0 and command.done():
            break
        await asyncio.sleep(pace)
    answer = await command
    result = answer.result if isinstance(answer.result, dict) else {}
    if "taskId" not in result:
        raise ServerError(f"{client.name}: agentLsp.fix did not start a task: {answer.result!r}")
    return {
        "command_ms": answer.elapsed_ms,
        "code_action_after_command_ms": latencies[0],
        "worst_code_action_ms": max(latencies),
        "code_actions": len(latencies),
    }


async def measure_first(setup: Setup) -> Json:
    """The editor's wait at the start of a task, ours beside bare pygls (whose `agentLsp.fix`
    answers at once, with nothing behind it): fresh servers per run, on a server that has
    settled after opening the buffers, and on one sent the command right after `initialized`
    (the agent still loading)."""
    n_lines = setup.args.task_lines
    project, big, text = make_task_project(setup, n_lines)
    plan = code_action_params(text, big.as_uri(), 400, seed=11)
    model = await FakeModel.start(setup, big.name)
    names = [OURS, BARE]
    samples: dict[str, dict[str, list[Json]]] = {
        scenario: {which: [] for which in names} for scenario in ("settled", "at_once")
    }
    try:
        env = {
            OURS: {
                **setup.env,
                "AGENT_LSP_BASE_URL": model.base_url,
                "AGENT_LSP_API_KEY": "x",
                "AGENT_LSP_MODEL": "fake-model",
            },
            BARE: setup.env,
        }
        documents = [(big.as_uri(), text), ((project / "calc.py").as_uri(), "")]
        documents[1] = (documents[1][0], (project / "calc.py").read_text(encoding="utf-8"))
        for k in range(setup.args.first_runs):
            for scenario in ("settled", "at_once"):
                for which in rotate(names, k):
                    project, big, text = make_task_project(setup, n_lines)
                    client = await spawn(setup, which, env[which])
                    try:
                        await open_session(client, project, setup, documents)
                        if scenario == "settled":
                            await settle(client, setup)
                        samples[scenario][which].append(
                            await first_second(client, project, plan, setup)
                        )
                    finally:
                        await client.kill()
    finally:
        await model.stop()

    def figures(runs: list[Json]) -> Json:
        return {
            key: {
                "median": statistics.median(r[key] for r in runs),
                "max": max(r[key] for r in runs),
                "runs": [round(r[key], 2) for r in runs],
            }
            for key in ("command_ms", "code_action_after_command_ms", "worst_code_action_ms")
        }

    return {
        "runs": setup.args.first_runs,
        "lines": n_lines,
        "pace_ms": setup.args.pace_ms,
        **{
            scenario: {which: figures(runs) for which, runs in by_server.items()}
            for scenario, by_server in samples.items()
        },
        "loadavg_at_end": list(os.getloadavg()),
    }


# --------------------------------------------------------------------------- didChange throughput


async def edit_burst(
    client: LspClient, uri: str, edits: Sequence[Any], first_version: int, barrier: Json
) -> float:
    """Send `edits` as didChange notifications as fast as the pipe takes them, then one
    codeAction; edits per second from the first write to the codeAction's answer (the server
    handles messages in order, so that answer means every edit was applied)."""
    t0 = time.perf_counter_ns()
    for i, edit in enumerate(edits):
        client.notify("textDocument/didChange", did_change(uri, first_version + i, edit))
        if i % 64 == 63:
            await client.drain()
    response = await client.request("textDocument/codeAction", barrier, 120.0, check=False)
    return len(edits) / ((response.received_ns - t0) / 1e9)


async def measure_did_change(setup: Setup, profile: Json | None = None) -> Json:
    """Incremental single-character edits on the 20,000-line buffer: edits/s, alternating servers.

    With `profile`, only ours, with py-spy attached."""
    n_lines = setup.args.task_lines
    path = setup.root / f"edits_{n_lines}.py"
    text = generate_python(n_lines)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    per_round, rounds, warmup = setup.args.edits, setup.args.edit_rounds, 100
    plan = insert_plan(text, warmup + per_round * rounds)
    barrier = code_action_params(text, uri, 1, seed=9)[0]
    names = [OURS] if profile is not None else [*setup.servers, FLOOR]
    rates: dict[str, list[float]] = {which: [] for which in names}
    async with sessions(setup, names) as clients:
        for client in clients.values():
            await open_session(client, setup.root, setup, [(uri, text)])
        for client in clients.values():
            await settle(client, setup)
        for client in clients.values():  # unmeasured warm-up burst
            await edit_burst(client, uri, plan[:warmup], 2, barrier)
        spy = None
        if profile is not None:
            spy = await PySpy.attach(
                profile["py_spy"],
                clients[OURS].pid,
                setup.tmp / "edits.folded",
                setup.args.spy_rate,
            )
        for r in range(rounds):
            chunk = plan[warmup + r * per_round : warmup + (r + 1) * per_round]
            for which in rotate(names, r):
                if which == COPILOT and r > 0:  # a reference only, and slow: one round
                    continue
                rate = await edit_burst(
                    clients[which], uri, chunk, 2 + warmup + r * per_round, barrier
                )
                rates[which].append(rate)
        if spy is not None and profile is not None:
            profile["py_spy_stderr"] = (await spy.stop())[-500:]
    result: Json = {
        "lines": n_lines,
        "edits_per_round": per_round,
        "rounds": rounds,
        "edits_per_s": {
            which: {"median": statistics.median(values), "rounds": values}
            for which, values in rates.items()
        },
    }
    if BARE in rates:
        result["ratio"] = (
            result["edits_per_s"][OURS]["median"] / result["edits_per_s"][BARE]["median"]
        )
    if profile is not None:
        profile["samples"] = summarize_stacks(setup.tmp / "edits.folded")
    return result


# --------------------------------------------------------------------------- proxy mode


async def measure_proxy(setup: Setup) -> Json:
    """hover and codeAction round trips: pylsp alone vs `agent-lsp serve --wrap -- pylsp`."""
    n_lines = setup.args.proxy_lines
    project = setup.tmp / "proxy-project"
    project.mkdir(exist_ok=True)
    path = project / f"module_{n_lines}.py"
    text = generate_python(n_lines, seed=5)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    count = setup.args.proxy_requests
    hovers = hover_positions(text, count)
    actions = code_action_params(text, uri, count, seed=11)
    names = [DIRECT, PROXY]
    root_setup = dataclasses.replace(setup, root=project)
    async with sessions(root_setup, names) as clients:
        for client in clients.values():
            await open_session(client, project, setup, [(uri, text)])
        for client in clients.values():  # pylsp lints the new file: wait for that to be over
            with contextlib.suppress(ServerError):
                await client.wait_for("textDocument/publishDiagnostics", 1, 30)
            await wait_quiet(client.pid, 20.0, strict=False)

        async def hover(which: str, position: Json) -> Response:
            params = {"textDocument": {"uri": uri}, "position": position}
            return await clients[which].request("textDocument/hover", params, setup.timeout)

        for position in hovers:  # warm-up: jedi has seen every position once on both sides
            for which in names:
                await hover(which, position)
        for params in actions[:20]:
            for which in names:
                await clients[which].request("textDocument/codeAction", params, setup.timeout)
        latency: dict[str, dict[str, list[float]]] = {
            m: {w: [] for w in names} for m in ("hover", "codeAction")
        }
        same_hover, actions_seen = 0, {w: 0 for w in names}
        differing: list[Json] = []
        for k in range(count):
            results: dict[str, Any] = {}
            for which in rotate(names, k):
                response = await hover(which, hovers[k])
                latency["hover"][which].append(response.elapsed_ms)
                results[which] = response.result
            if results[DIRECT] == results[PROXY]:
                same_hover += 1
            elif len(differing) < 3:
                differing.append({"position": hovers[k], **results})
            for which in rotate(names, k + 1):
                response = await clients[which].request(
                    "textDocument/codeAction", actions[k], setup.timeout
                )
                latency["codeAction"][which].append(response.elapsed_ms)
                actions_seen[which] += len(response.result or [])
        memory = {which: tree_memory(client.pid) for which, client in clients.items()}

    result: Json = {
        "lines": n_lines,
        "requests": count,
        "identical_hover_answers": same_hover,
        "differing_hover_answers": differing,
    }
    for method, by_server in latency.items():
        direct, proxied = by_server[DIRECT], by_server[PROXY]
        added = [p - d for p, d in zip(proxied, direct, strict=True)]
        result[method] = {
            DIRECT: summary(direct, raw=True),
            PROXY: summary(proxied, raw=True),
            "ratio_median": statistics.median(proxied) / statistics.median(direct),
            "added_ms_median": statistics.median(added),
            "added_ms_mean": statistics.fmean(added),
        }
    result["codeAction"]["actions_returned"] = actions_seen
    result["rss_kib"] = {which: entry["VmRSS"] for which, entry in memory.items()}
    result["memory"] = memory
    return result


# --------------------------------------------------------------------------- import analysis


@dataclass
class ImportLine:
    name: str
    depth: int
    self_us: int
    cumulative_us: int
    parent: str | None = None


def parse_importtime(stderr: str) -> list[ImportLine]:
    """`-X importtime` lines, with each module's importer (the output is in post-order)."""
    rows: list[ImportLine] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        raw = parts[2].rstrip()
        depth = (len(raw) - len(raw.lstrip()) - 1) // 2
        rows.append(ImportLine(raw.strip(), depth, int(parts[0]), int(parts[1])))
    ancestors: list[str] = []
    for row in reversed(rows):
        del ancestors[row.depth :]
        row.parent = ancestors[-1] if ancestors else None
        ancestors.append(row.name)
    return rows


async def importtime(setup: Setup, which: str) -> list[ImportLine]:
    argv = setup.argv(which)
    proc = await asyncio.create_subprocess_exec(
        argv[0],
        "-X",
        "importtime",
        *argv[1:],
        stdin=subprocess.DEVNULL,  # EOF at once: the server imports, starts, and exits
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=setup.env,
        cwd=REPO_ROOT,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(), setup.timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return parse_importtime(err.decode(errors="replace"))


OWN_GROUP = "agent_lsp + adapters (own modules)"


def _top(name: str) -> str:
    return name.split(".")[0]


def _own(name: str) -> bool:
    return _top(name) in ("agent_lsp", "adapters")


async def measure_imports(setup: Setup) -> Json:
    """Which modules ours imports that the bare server does not, and who pulls them in."""
    runs: dict[str, list[list[ImportLine]]] = {OURS: [], BARE: []}
    for _ in range(setup.args.import_runs):
        for which in (OURS, BARE):
            runs[which].append(await importtime(setup, which))

    def medians(which: str) -> tuple[dict[str, float], dict[str, float]]:
        selfs: dict[str, list[int]] = {}
        cums: dict[str, list[int]] = {}
        for rows in runs[which]:
            for row in rows:
                selfs.setdefault(row.name, []).append(row.self_us)
                cums.setdefault(row.name, []).append(row.cumulative_us)
        return (
            {k: statistics.median(v) / 1000 for k, v in selfs.items()},
            {k: statistics.median(v) / 1000 for k, v in cums.items()},
        )

    ours_self, ours_cum = medians(OURS)
    bare_self, _ = medians(BARE)
    rows = runs[OURS][0]
    parent = {row.name: row.parent for row in rows}

    def entry_point(name: str) -> tuple[str, str]:
        """The outermost third-party module above `name` and the own module that imported it."""
        node = name
        while (up := parent.get(node)) is not None and not _own(up):
            node = up
        return node, parent.get(node) or "(at run time)"

    extra = [name for name in ours_self if name not in bare_self]
    groups: dict[str, Json] = {}
    for name in extra:
        if _own(name):
            group, by = OWN_GROUP, None
        else:
            entry_module, by = entry_point(name)
            group = _top(entry_module)
        entry = groups.setdefault(
            group, {"self_ms": 0.0, "modules": 0, "packages": [], "imported_by": []}
        )
        entry["self_ms"] += ours_self[name]
        entry["modules"] += 1
        if _top(name) not in entry["packages"]:
            entry["packages"].append(_top(name))
        if by is not None and by not in entry["imported_by"]:
            entry["imported_by"].append(by)
    ranked = dict(sorted(groups.items(), key=lambda kv: -kv[1]["self_ms"]))
    own_cumulative = {
        name: ours_cum[name]
        for name in sorted((n for n in ours_cum if _own(n)), key=lambda n: -ours_cum[n])
    }
    return {
        "runs": setup.args.import_runs,
        "total_self_ms": {OURS: sum(ours_self.values()), BARE: sum(bare_self.values())},
        "modules": {OURS: len(ours_self), BARE: len(bare_self)},
        "extra_self_ms": sum(ours_self[n] for n in extra),
        "extra_by_package": ranked,
        "own_module_cumulative_ms": own_cumulative,
    }


# --------------------------------------------------------------------------- profile


async def measure_profile(setup: Setup) -> Json:
    """Ours alone again, sampled by py-spy: a didChange burst, and the agent-task window under
    `loop_probe.py` (which logs every event-loop callback of `--stall-ms` or more)."""
    py_spy = ensure_py_spy(Path(setup.args.cache_dir), setup.args.py_spy)
    if py_spy is None:
        return {"error": "py-spy is not available (pip install py-spy, or --py-spy PATH)"}
    edits: Json = {"py_spy": py_spy}
    _progress("profile: didChange bursts under py-spy ...")
    edits["measured"] = await measure_did_change(setup, profile=edits)
    task: Json = {"py_spy": py_spy}
    _progress("profile: agent task window under py-spy and loop_probe ...")
    task["measured"] = await measure_task(setup, profile=task)
    return {
        "py_spy": py_spy,
        "rate_hz": setup.args.spy_rate,
        "stall_ms": setup.args.stall_ms,
        "did_change": edits,
        "task": task,
    }


# --------------------------------------------------------------------------- report


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value >= 10 else f"{value:.2f} ms"


def _mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def _x(value: float) -> str:
    return f"{value:.2f}x"


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def fmt(row: Sequence[str]) -> str:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(widths[i + 1]) for i, cell in enumerate(row[1:])]
        return "  ".join(cells).rstrip()

    return [fmt(head), "  ".join("-" * w for w in widths), *(fmt(r) for r in rows)]


def targets(results: Json) -> list[Json]:
    """Each target of the issue with the measured figure and whether it is met."""
    found: list[Json] = []
    task = results.get("task")
    if task:
        p99 = task["code_action_ms"][OURS]["p99"]
        found.append(
            {
                "target": f"codeAction p99 while an agent task runs <= {TARGET_TASK_P99_MS:g} ms",
                "measured": _ms(p99),
                "met": p99 <= TARGET_TASK_P99_MS,
            }
        )
    first = results.get("first")
    if first:
        settled = first["settled"][OURS]
        command, worst = settled["command_ms"]["median"], settled["worst_code_action_ms"]["median"]
        found.append(
            {
                "target": "executeCommand answer at a task's start <= "
                f"{TARGET_FIRST_COMMAND_MS:g} ms (idle machine)",
                "measured": _ms(command),
                "met": command <= TARGET_FIRST_COMMAND_MS,
            }
        )
        found.append(
            {
                "target": "worst codeAction in a task's first second <= "
                f"{TARGET_FIRST_CODE_ACTION_MS:g} ms (idle machine)",
                "measured": _ms(worst),
                "met": worst <= TARGET_FIRST_CODE_ACTION_MS,
            }
        )
    edits = results.get("did_change")
    if edits:
        rate = edits["edits_per_s"][OURS]["median"]
        found.append(
            {
                "target": f"didChange throughput >= {TARGET_EDITS_PER_S:,.0f} edits/s",
                "measured": f"{rate:,.0f} edits/s",
                "met": rate >= TARGET_EDITS_PER_S,
            }
        )
    startup = results.get("startup_ms")
    if startup:
        ratio = startup["ratio_median"]
        found.append(
            {
                "target": f"start-up to initialize response <= {TARGET_STARTUP_RATIO:g}x bare",
                "measured": _x(ratio),
                "met": ratio <= TARGET_STARTUP_RATIO,
            }
        )
    buffers = results.get("buffers")
    if buffers:
        biggest = max(buffers, key=lambda b: b["lines"])
        rss = biggest["rss_idle_kib"][OURS]
        found.append(
            {
                "target": f"idle RSS <= 80 MB ({_mib(TARGET_IDLE_RSS_KIB)}), "
                f"{biggest['lines']:,}-line buffer open",
                "measured": _mib(rss),
                "met": rss <= TARGET_IDLE_RSS_KIB,
            }
        )
    return found


def render(results: Json) -> str:
    meta = results["meta"]
    servers: list[str] = results["config"]["servers"]
    has_copilot = COPILOT in servers
    head = ["figure", "ours", "bare pygls", "ours/bare", *(["Copilot"] if has_copilot else [])]
    rows: list[list[str]] = []

    def row(label: str, values: dict[str, str], ratio: str = "") -> None:
        cells = [label, values.get(OURS, ""), values.get(BARE, ""), ratio]
        rows.append(cells + ([values.get(COPILOT, "")] if has_copilot else []))

    startup = results.get("startup_ms")
    if startup:
        counts = "/".join(str(startup[w]["n"]) for w in servers)
        row(
            f"start-up to initialize response, median (n={counts})",
            {w: _ms(startup[w]["median"]) for w in servers},
            _x(startup["ratio_median"]),
        )
        row(
            "  start-up min / max",
            {w: f"{startup[w]['min']:.0f} / {startup[w]['max']:.0f} ms" for w in servers},
        )
        first = startup["first_code_action_ms"]
        row(
            "  to the answer of a codeAction sent right after initialized",
            {w: _ms(first[w]["median"]) for w in servers},
            _x(first["ratio_median"]),
        )
    buffers = results.get("buffers") or []
    if buffers:
        init = [buf["initialize_on_booted_server_ms"] for buf in buffers]
        med = {w: statistics.median(i[w] for i in init) for w in servers}
        row(
            f"  of which initialize handling (booted server, n={len(init)})",
            {w: _ms(v) for w, v in med.items()},
            _x(med[OURS] / med[BARE]),
        )
    for buf in buffers:
        n = f"{buf['lines']:,} lines"
        ca = buf["code_action_ms"]
        row(
            f"RSS after initialize, process tree ({n} session)",
            {w: _mib(buf["rss_after_initialize_kib"][w]) for w in servers},
            _x(buf["rss_after_initialize_kib"]["ratio"]),
        )
        row(
            f"RSS idle, {n} buffer open + {results['config']['idle_seconds']:g} s",
            {w: _mib(buf["rss_idle_kib"][w]) for w in servers},
            _x(buf["rss_idle_kib"]["ratio"]),
        )
        row(
            f"codeAction median, {n}, idle (n={ca[OURS]['n']})",
            {w: _ms(ca[w]["median"]) for w in servers},
            _x(ca["ratio_median"]),
        )
        row(
            f"codeAction p99, {n}, idle",
            {w: _ms(ca[w]["p99"]) for w in servers},
            _x(ca["ratio_p99"]),
        )
    first = results.get("first")
    if first:
        for scenario, when in (
            ("settled", "settled server"),
            ("at_once", "right after initialized"),
        ):
            got = first[scenario]
            runs = first["runs"]
            for key, label in (
                ("command_ms", f"executeCommand agentLsp.fix answer, {when}, median (n={runs})"),
                ("code_action_after_command_ms", "  codeAction written right behind it"),
                ("worst_code_action_ms", "  worst codeAction in the task's first second"),
            ):
                row(
                    label,
                    {w: _ms(got[w][key]["median"]) for w in (OURS, BARE)},
                    _x(got[OURS][key]["median"] / got[BARE][key]["median"]),
                )
    task = results.get("task")
    if task:
        ca = task["code_action_ms"]
        n = f"{task['lines']:,} lines"
        row(
            f"codeAction median, {n}, agent task running (n={ca[OURS]['n']})",
            {w: _ms(ca[w]["median"]) for w in servers},
            _x(ca["ratio_median"]),
        )
        row(
            f"codeAction p99, {n}, agent task running",
            {w: _ms(ca[w]["p99"]) for w in servers},
            _x(ca["ratio_p99"]),
        )
        row(
            f"codeAction max, {n}, agent task running",
            {w: _ms(ca[w]["max"]) for w in servers},
            _x(ca[OURS]["max"] / ca[BARE]["max"]),
        )
        row(
            f"RSS after the task (cancelled) + {results['config']['idle_seconds']:g} s",
            {w: _mib(task["rss_after_task_kib"][w]) for w in servers},
            _x(task["rss_after_task_kib"][OURS] / task["rss_after_task_kib"][BARE]),
        )
    edits = results.get("did_change")
    if edits:
        rates = edits["edits_per_s"]
        row(
            f"didChange, {edits['lines']:,} lines: edits/s "
            f"(median of {edits['rounds']} x {edits['edits_per_round']:,})",
            {
                w: f"{rates[w]['median']:,.0f}/s"
                + (" (1 round)" if len(rates[w]["rounds"]) < edits["rounds"] else "")
                for w in rates
            },
            _x(edits["ratio"]),
        )

    out = [
        f"agent-lsp vs bare pygls vs Copilot -- Python {meta['python']}, pygls {meta['pygls']}, "
        f"lsprotocol {meta['lsprotocol']}, {meta['cpus']} CPUs, {meta['platform']}, "
        f"load average {meta['loadavg_at_start'][0]:.1f} at start",
        f"Copilot: {results['config']['copilot']}",
        "",
        *table(head, rows),
    ]
    if has_copilot:
        out.append(
            "Copilot has no codeAction handler: its codeAction figures are the round trip of its "
            '"Method not found" error answer.'
        )
    if edits and FLOOR in edits["edits_per_s"]:
        out.append(
            f"didChange transport floor (bare pygls whose apply_change does nothing): "
            f"{edits['edits_per_s'][FLOOR]['median']:,.0f} edits/s, the most any document "
            "store can reach over pygls' stdio transport here."
        )
    if task:
        by_status: dict[str, int] = {}
        for key, count in task["tool_results"].items():
            status = key.rpartition(": ")[2]
            by_status[status] = by_status.get(status, 0) + count
        failed = [f"{k} {v}" for k, v in sorted(task["tool_results"].items()) if "success" not in k]
        tools = ", ".join(f"{v} {k}" for k, v in sorted(by_status.items()))
        tools += f" ({', '.join(failed)})" if failed else ""
        out += [
            "",
            f"agent task during the codeAction window ({task['window_s']:.1f} s, one request "
            f"per server every {task['pace_ms']:g} ms + round trips): "
            f"{task['model_turns_in_window']} model turns, ours used "
            f"{task['ours_cpu_s']:.1f} s CPU ({task['ours_cpu_share']:.0%} of a core, pytest "
            f"runs included); tool results so far: {tools or 'none'}; "
            f"{task['ours_answers_with_task_running']}/{task['code_action_ms'][OURS]['n']} of "
            f'ours\' answers offered "{CANCEL_TITLE}" (task running); end: {task["final_message"]}',
        ]
    proxy = results.get("proxy")
    if proxy:
        out += ["", *render_proxy(proxy)]
    out += ["", "targets:"]
    for entry in targets(results):
        out.append(f"  {_verdict(entry['met']):6}  {entry['target']}: {entry['measured']}")
    if startup:
        out += [
            "",
            f"interpreter floor (spawn `python -c pass` to exit): "
            f"{_ms(startup['interpreter_floor_ms'])}",
        ]
    imports = results.get("imports")
    if imports:
        out += render_imports(imports)
    profile = results.get("profile")
    if profile:
        out += ["", *render_profile(profile)]
    return "\n".join(out)


def render_proxy(proxy: Json) -> list[str]:
    head = ["proxy mode", LABELS[DIRECT], LABELS[PROXY], "ratio", "added (paired median)"]
    rows: list[list[str]] = []
    for method in ("hover", "codeAction"):
        entry = proxy[method]
        rows.append(
            [
                f"{method} median (n={entry[DIRECT]['n']})",
                _ms(entry[DIRECT]["median"]),
                _ms(entry[PROXY]["median"]),
                _x(entry["ratio_median"]),
                f"{entry['added_ms_median']:+.2f} ms",
            ]
        )
        rows.append(
            [
                f"{method} p99",
                _ms(entry[DIRECT]["p99"]),
                _ms(entry[PROXY]["p99"]),
                _x(entry[PROXY]["p99"] / entry[DIRECT]["p99"]),
                "",
            ]
        )
    rss = proxy["rss_kib"]
    rows.append(
        ["RSS, process tree", _mib(rss[DIRECT]), _mib(rss[PROXY]), _x(rss[PROXY] / rss[DIRECT]), ""]
    )
    actions = proxy["codeAction"]["actions_returned"]
    return [
        *table(head, rows),
        f"same file ({proxy['lines']:,} generated lines) and positions for both, requests "
        f"alternating, after one unmeasured pass over every hover position; "
        f"{proxy['identical_hover_answers']}/{proxy['requests']} hover answers identical; code "
        f"actions returned: pylsp {actions[DIRECT]}, proxy {actions[PROXY]} (pylsp's + the "
        f"agent's)",
    ]


def render_imports(imports: Json) -> list[str]:
    out = [
        "",
        f"imports (-X importtime, median of {imports['runs']}): ours "
        f"{imports['total_self_ms'][OURS]:.0f} ms in {imports['modules'][OURS]} modules, "
        f"bare {imports['total_self_ms'][BARE]:.0f} ms in {imports['modules'][BARE]}; "
        f"only in ours: {imports['extra_self_ms']:.0f} ms",
        "imports only ours makes, by entry point (self times summed over the subtree):",
    ]
    for name, entry in list(imports["extra_by_package"].items())[:10]:
        others = [p for p in entry["packages"] if p != name and name != OWN_GROUP]
        incl = f", incl. {', '.join(others[:5])}" if others else ""
        by = ", ".join(entry["imported_by"][:3])
        via = f"  <- {by}" if by else ""
        out.append(f"  {entry['self_ms']:7.1f} ms  {name} ({entry['modules']} modules{incl}){via}")
    return out


_ENTRY_FRAMES = (
    "<frozen runpy>",
    "asyncio/runners.py",
    "asyncio/base_events.py",
    "asyncio/events.py",
    "pygls/server.py",
    "agent_lsp/cli/main.py",
    "agent_lsp/__main__.py",
    "loop_probe.py",
    "<frozen importlib",
)


def _frames(entries: Sequence[Json], n: int, skip_entry: bool = False) -> list[str]:
    """Top `n` frames; with `skip_entry`, without the start-up and event-loop frames that are
    in every sample (inclusive lists)."""
    kept = [e for e in entries if not (skip_entry and any(m in e["frame"] for m in _ENTRY_FRAMES))]
    return [f"    {e['pct']:5.1f}%  {e['frame']}" for e in kept[:n]]


def _chain_text(frames: Sequence[str]) -> str:
    return " > ".join(frames) if frames else "-"


def render_profile(profile: Json) -> list[str]:
    if "error" in profile:
        return [f"profile: {profile['error']}"]
    out = [f"profile (py-spy {profile['rate_hz']} Hz, --nonblocking; main thread, busy samples):"]
    edits = profile["did_change"]
    samples = edits["samples"]
    rate = edits["measured"]["edits_per_s"][OURS]["median"]
    out += [
        f"  didChange bursts ({rate:,.0f} edits/s while sampled): "
        f"{samples['main_thread_busy_samples']} busy / {samples['main_thread_samples']} samples",
        "   by leaf function:",
        *_frames(samples["busy_by_leaf"], 6),
        "   inclusive:",
        *_frames(samples["busy_inclusive"], 16, skip_entry=True),
    ]
    task = profile["task"]
    measured = task["measured"]
    latency = measured["code_action_ms"][OURS]
    samples, stalls = task["samples"], task["stalls"]
    share = stalls["total_ms"] / 1000 / measured["window_s"]
    out += [
        f"  agent task window, ours alone under loop_probe ({measured['window_s']:.1f} s; "
        f"codeAction median {_ms(latency['median'])}, p99 {_ms(latency['p99'])}, "
        f"max {_ms(latency['max'])}):",
        f"   server-loop callbacks of >= {profile['stall_ms']:g} ms in the window: "
        f"{stalls['count']} ({stalls['over_5ms']} over 5 ms), {stalls['total_ms']:.0f} ms in all "
        f"({share:.0%} of the window), of which {stalls['cpu_ms']:.0f} ms on the CPU (the rest: "
        "waiting for the GIL or a CPU); by what ran (n, wall total, CPU total, longest):",
    ]
    for group in stalls["groups"][:10]:
        out.append(
            f"    n={group['n']:<4} {group['total_ms']:7.1f} ms  cpu {group['cpu_ms']:6.1f} ms  "
            f"max {group['max_ms']:6.1f} ms  {group['what']}"
        )
    pauses = task.get("gc_pauses") or {}
    if pauses.get("count"):
        out.append(
            f"   garbage collections of >= {profile['stall_ms']:g} ms (they stop every thread): "
            f"{pauses['count']} (by generation {pauses['by_generation']}), "
            f"{pauses['total_ms']:.0f} ms in all, longest {pauses['max_ms']:.1f} ms"
        )
    agent = task.get("agent_loop_stalls") or {}
    if agent.get("count"):
        out.append(
            f"   (the agent thread's loop, which delays requests only through the GIL: "
            f"{agent['count']} callbacks of >= {profile['stall_ms']:g} ms, "
            f"{agent['total_ms']:.0f} ms in all, {agent['cpu_ms']:.0f} ms CPU, "
            f"longest {agent['longest'][0]['ms']:.1f} ms)"
        )
    out += ["   longest (resumed at -> paused at):"]
    for entry in stalls["longest"][:3]:
        out.append(
            f"    {entry['ms']:7.1f} ms  {entry['what']}: {_chain_text(entry.get('from') or [])}"
            f"  ->  {_chain_text(entry.get('to') or [])}"
        )
    early = task.get("stalls_before_window") or {}
    if early.get("groups"):
        out.append("   before the window (start-up, initialized, didOpen), longest callbacks:")
        for entry in early["longest"][:2]:
            out.append(
                f"    {entry['ms']:7.1f} ms  {entry['what']}: {_chain_text(entry.get('to') or [])}"
            )
    out += [
        "   busy samples by event-loop callback:",
        *_frames(samples["busy_by_loop_callback"], 6),
        "   by innermost frame of agent_lsp / adapters:",
        *_frames(samples["busy_by_innermost_own_frame"], 12),
        "   by leaf function:",
        *_frames(samples["busy_by_leaf"], 10),
        "   inclusive:",
        *_frames(samples["busy_inclusive"], 14, skip_entry=True),
    ]
    return out


def environment() -> Json:
    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "?"

    commit = "?"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    return {
        "python": platform.python_version(),
        "executable": sys.executable,
        "pygls": version("pygls"),
        "lsprotocol": version("lsprotocol"),
        "python-lsp-server": version("python-lsp-server"),
        "agent_lsp": version("agent-lsp"),
        "git_commit": commit,
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "loadavg_at_start": list(os.getloadavg()),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# --------------------------------------------------------------------------- main

SECTIONS = ("startup", "buffers", "first", "task", "edits", "proxy", "imports")
RESULT_KEYS = {"startup": "startup_ms", "edits": "did_change"}


def server_env(home: Path) -> dict[str, str]:
    """Inherited environment minus anything that could point the agent at a real model."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AGENT_LSP_", "XDG_", "PYTHONSTARTUP", "GITHUB_", "GH_"))
    }
    env.update(HOME=str(home), AGENT_LSP_BASE_URL=NO_MODEL_URL, PYTHONUNBUFFERED="1")
    return env


def find_pylsp(python: str) -> str | None:
    beside = Path(python).parent / "pylsp"
    return str(beside) if beside.exists() else shutil.which("pylsp")


async def run(args: argparse.Namespace) -> Json:
    tmp = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    try:
        home, root = tmp / "home", tmp / "project"
        home.mkdir()
        root.mkdir()
        only = set(args.only or SECTIONS)
        copilot, note = (None, "skipped (--no-copilot)")
        if not args.no_copilot and only & {"startup", "buffers", "task", "edits"}:
            copilot, note = ensure_copilot(Path(args.cache_dir), args.copilot_version)
            if copilot is None:
                _progress(f"Copilot left out: {note}")
        setup = Setup(
            python=args.python,
            tmp=tmp,
            home=home,
            root=root,
            env=server_env(home),
            copilot=copilot,
            copilot_note=note,
            pylsp=find_pylsp(args.python),
            args=args,
            servers=(OURS, BARE, COPILOT) if copilot else (OURS, BARE),
        )
        # The root folder holds a big file before anyone initializes on it.
        (root / f"big_{args.sizes[0]}.py").write_text(generate_python(args.sizes[0]))
        results: Json = {"meta": environment(), "config": _config(setup)}
        sections: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
            ("startup", "start-up ...", lambda: measure_startup(setup)),
            ("buffers", "memory and idle code actions ...", lambda: measure_buffers(setup)),
            (
                "first",
                "a task's first second: the executeCommand answer, code actions meanwhile ...",
                lambda: measure_first(setup),
            ),
            (
                "task",
                f"{args.task_lines:,}-line buffer: code actions while an agent task runs ...",
                lambda: measure_task(setup),
            ),
            (
                "edits",
                f"{args.task_lines:,}-line buffer: didChange throughput ...",
                lambda: measure_did_change(setup),
            ),
            (
                "proxy",
                "proxy mode: pylsp alone vs agent-lsp --wrap pylsp ...",
                lambda: measure_proxy(setup),
            ),
            ("imports", "import times ...", lambda: measure_imports(setup)),
        ]
        if args.profile:
            sections.append(("profile", "profile ...", lambda: measure_profile(setup)))
        for section, text, measure in sections:
            if section != "profile" and section not in only:
                continue
            if section == "proxy" and setup.pylsp is None:
                _progress("proxy mode left out: pylsp is not installed")
                continue
            if section == "imports" and args.import_runs <= 0:
                continue
            _progress(text)
            try:
                results[RESULT_KEYS.get(section, section)] = await measure()
            except ServerError as exc:  # the other sections still run
                _progress(f"{section} failed: {exc}")
                results.setdefault("errors", {})[section] = str(exc)
                REAPER.kill_all()
        results["targets"] = targets(results)
        return results
    finally:
        killed = REAPER.kill_all()
        if killed:
            _progress(f"killed leftover processes: {', '.join(killed)}")
        shutil.rmtree(tmp, ignore_errors=True)


def _config(setup: Setup) -> Json:
    args = setup.args
    return {
        "servers": list(setup.servers),
        "commands": {
            which: [Path(a).name if i == 0 else a for i, a in enumerate(setup.argv(which))]
            for which in [*setup.servers, *([DIRECT, PROXY] if setup.pylsp else [])]
        },
        "copilot": setup.copilot_note,
        **{
            key: getattr(args, key)
            for key in (
                "startup_runs",
                "copilot_startup_runs",
                "requests",
                "warmup",
                "sizes",
                "task_lines",
                "task_requests",
                "first_runs",
                "pace_ms",
                "task_rounds",
                "task_model_delay",
                "edits",
                "edit_rounds",
                "proxy_lines",
                "proxy_requests",
                "timeout",
                "import_runs",
            )
        },
        "idle_seconds": args.idle,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add = parser.add_argument
    add("--python", default=sys.executable, help="interpreter for the Python servers")
    add("--only", nargs="+", choices=SECTIONS, help="run only these sections (default: all)")
    add("--startup-runs", type=int, default=20, help="spawns per server (>= 10)")
    add("--copilot-startup-runs", type=int, default=10, help="spawns of Copilot (slow to start)")
    add("--requests", type=int, default=1000, help="measured idle codeActions per buffer size")
    add("--warmup", type=int, default=20, help="unmeasured codeActions first")
    add("--sizes", type=int, nargs="+", default=[5000, 20000], help="idle buffer sizes (lines)")
    add("--idle", type=float, default=1.0, help="seconds idle before reading RSS")
    add("--task-lines", type=int, default=20000, help="buffer lines for the task and edit runs")
    add("--task-requests", type=int, default=1000, help="codeActions while the task runs")
    add("--first-runs", type=int, default=5, help="fresh servers per scenario (first second)")
    add("--pace-ms", type=float, default=5.0, help="pause between codeAction rounds (task)")
    add("--task-rounds", type=int, default=60, help="tool rounds the fake model asks for")
    add("--task-model-delay", type=float, default=0.15, help="seconds per fake model turn")
    add("--edits", type=int, default=1000, help="didChange edits per round")
    add("--edit-rounds", type=int, default=3, help="rounds of edits per server")
    add("--proxy-lines", type=int, default=2000, help="lines of the file hovered in proxy mode")
    add("--proxy-requests", type=int, default=150, help="hovers and codeActions per server")
    add("--timeout", type=float, default=15.0, help="seconds per response")
    add("--import-runs", type=int, default=5, help="-X importtime runs (0: skip)")
    add("--no-copilot", action="store_true", help="leave Copilot's language server out")
    add("--copilot-version", default=COPILOT_VERSION, help="npm version of Copilot's server")
    add(
        "--cache-dir",
        default=str(Path(tempfile.gettempdir()) / "lsp-bench-cache"),
        help="where Copilot's server (and py-spy, for --profile) are installed",
    )
    add("--profile", action="store_true", help="also sample ours with py-spy (edits, task)")
    add("--py-spy", help="py-spy executable (default: on PATH, else installed into the cache)")
    add("--spy-rate", type=int, default=250, help="py-spy samples per second")
    add("--stall-ms", type=float, default=3.0, help="loop stalls logged from this long (profile)")
    add("--output", type=Path, default=RESULTS_PATH, help="JSON results file")
    args = parser.parse_args(argv)

    try:
        results = asyncio.run(run(args))
    except ServerError as exc:
        print(f"lsp-bench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lsp-bench: interrupted (servers killed)", file=sys.stderr)
        return 130
    finally:
        REAPER.kill_all()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))
    for section, error in (results.get("errors") or {}).items():
        print(f"\n{section} FAILED: {error}")
    print(f"\nresults: {args.output}")
    return 1 if results.get("errors") else 0


if __name__ == "__main__":
    raise SystemExit(main())
