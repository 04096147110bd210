"""The effectiveness benchmark's driver (bench/effect/run.sh runs it; bench/effect.md says what
it measures). Installs what is missing, starts the model server and the counting proxy, runs
harnesses x tasks x repeats, judges every run from outside and writes bench/effect.md's results
section and bench/results/effect-<time>.json.

    bench/effect/run.sh --check-tasks              # every task fails as shipped, its fix passes
    bench/effect/run.sh --tasks py-slug,go-average --harness agent-lsp,aider --timeout 600
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.effect import install
from bench.effect.harnesses import HARNESSES, PEER_OF, Context, RunEnd, python_of_bench
from bench.effect.proxy import CountingProxy
from bench.effect.report import RunRecord, failure_kind, harness_table, summarize, task_table
from bench.effect.tasks import (
    Task,
    TaskError,
    Toolchain,
    check_task,
    copy_project,
    git_init,
    judge,
    load_tasks,
    snapshot,
)

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
MARKER = "<!-- results: written by bench/effect/run.py from here on -->"
ALIAS = "qwen2.5-coder-1.5b-instruct"
CONTEXT = 16384


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/effect/run.sh", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--tasks", help="comma-separated task names (default: all)")
    p.add_argument(
        "--harness",
        default=",".join(HARNESSES),
        help=f"comma-separated harnesses (default: all: {', '.join(HARNESSES)})",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs of each harness on each task")
    p.add_argument("--timeout", type=float, default=600, help="seconds a run may take (600)")
    p.add_argument("--check-tasks", action="store_true", help="only check the tasks (no model)")
    p.add_argument(
        "--cache",
        type=Path,
        default=Path(
            os.environ.get("AGENT_LSP_BENCH_CACHE", Path.home() / ".cache" / "agent-lsp-bench")
        ),
        help="peers' venvs, node_modules, Go caches (default ~/.cache/agent-lsp-bench)",
    )
    p.add_argument("--base-url", help="an OpenAI-compatible server already running (no start)")
    p.add_argument("--model-name", default=ALIAS, help=f"the model's name there ({ALIAS})")
    p.add_argument("--threads", type=int, default=2, help="the model server's threads (2)")
    p.add_argument("--note", default="", help="a line for the report (e.g. 'smoke run')")
    p.add_argument("--report", type=Path, default=REPO / "bench" / "effect.md")
    p.add_argument("--keep", action="store_true", help="keep the runs' folders")
    args = p.parse_args(argv)
    unknown = [h for h in args.harness.split(",") if h not in HARNESSES]
    if unknown:
        p.error(f"unknown harness {', '.join(unknown)} (have: {', '.join(HARNESSES)})")
    if args.repeat < 1 or args.timeout <= 0:
        p.error("--repeat must be >= 1 and --timeout > 0")
    return args


def say(message: str) -> None:
    print(f"effect: {message}", file=sys.stderr, flush=True)


def check_tasks(tasks: list[Task], tools: Toolchain) -> int:
    bad = 0
    with tempfile.TemporaryDirectory(prefix="effect-check-") as tmp:
        for task in tasks:
            result = check_task(task, tools, Path(tmp) / task.name)
            bad += not result.ok
            state = "ok" if result.ok else f"BAD: {result.problem}"
            print(f"{task.name:24} {task.runner:8} {task.kind:24} {state}", flush=True)
    print(f"{len(tasks) - bad} of {len(tasks)} tasks fail as shipped and pass with their fix")
    return 1 if bad else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def start_server(
    python: Path, model: Path, threads: int, log: Path, port: int | None = None
) -> tuple[subprocess.Popen[bytes], str, list[str]]:
    """llama-cpp-python's server with the model's own chat template (no --chat_format), on
    `port` (a free one by default); its output appended to `log`."""
    port = port or _free_port()
    argv = [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
    ]
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 600
    while not _answers(f"{base}/models"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"effect: the model server did not start:\n{log.read_text()[-3000:]}")
        time.sleep(1)
    return proc, base, argv


class Restarter:
    """Starts the bench's model server again on its port (the proxy's upstream), `proc` the
    one running now."""

    def __init__(
        self, proc: subprocess.Popen[bytes], start: Callable[[], subprocess.Popen[bytes]]
    ) -> None:
        self.proc = proc
        self._start = start

    def __call__(self) -> None:
        stop_server(self.proc)
        self.proc = self._start()


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


ABANDONED_GRACE = 10  # seconds a request may go on after its harness ended
SETTLE_AFTER_CUT = 60  # seconds the server may take to be free after a cut, before a restart


def one_run(
    harness: str,
    task: Task,
    repeat: int,
    ctx: Context,
    tools: Toolchain,
    proxy: CountingProxy,
    base: Path,
    logs: Path,
    restart: Callable[[], None] | None = None,
) -> RunRecord:
    """One harness on one task, judged; `restart` starts the model server again (None: a
    server the bench did not start)."""
    folder = base / harness / f"{task.name}-{repeat}"
    workdir = copy_project(task, folder / task.name, tools)
    git_init(workdir)
    before = snapshot(workdir)
    log = logs / f"{harness}.{task.name}.{repeat}.log"
    proxy.take()
    proxy.label = f"{harness}/{task.name}/{repeat}"
    started = time.monotonic()
    try:
        end = HARNESSES[harness](task, workdir, folder / "home", ctx, log)
    except Exception as exc:  # a harness that breaks is a failed run, not a broken benchmark
        end = RunEnd("error", f"{type(exc).__name__}: {exc}"[:300], None)
    seconds = time.monotonic() - started
    # A run killed at its limit (or a harness that left before its reply, aider) may leave a
    # request the server still computes: nobody reads it, so it is cut after a short grace (the
    # proxy waited up to 900 s for one aider left); what it cost so far is the run's.
    drained = time.monotonic()
    if not proxy.wait_idle(ABANDONED_GRACE):
        cut = proxy.abort(proxy.label)
        say(f"{cut} model request(s) the harness left in flight cut after {ABANDONED_GRACE} s")
        # the server may still compute the cut request: llama-cpp-python stops a streamed
        # one at its next chunk, but computes a non-streamed one to its end (aider's chat
        # summary, left as it exits: 6 minutes and more). The next run must not pay for it.
        settle = SETTLE_AFTER_CUT if restart is not None else max(ctx.timeout, 900)
        settled = proxy.settle(ctx.model, settle)
        if not settled and restart is not None:
            say(f"the model server still busy {settle} s after the cut: starting it again")
            restart()
        elif not settled:
            say("the model server did not answer after the cut; going on")
        proxy.wait_idle(60)
    drain = time.monotonic() - drained
    calls = [c for c in proxy.take() if c.label == proxy.label]
    verdict = judge(task, workdir, before, tools, folder / "judge")
    record = RunRecord(
        harness=harness,
        task=task.name,
        repeat=repeat,
        solved=verdict.solved,
        failure=failure_kind(
            verdict.solved,
            bool(verdict.changes.protected),
            bool(verdict.changes.sources),
            end.ended,
            end.malformed,
        ),
        ended=end.ended,
        detail=end.detail,
        exit_code=end.exit_code,
        malformed=end.malformed,
        steps=end.steps,
        calls=len(calls),
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
        estimated=any(c.estimated for c in calls),
        seconds=round(seconds, 1),
        drain_seconds=round(drain, 1),
        changed=list(verdict.changes.sources),
        protected=list(verdict.changes.protected),
        tests_output=verdict.tests.output[-1500:],
        log=str(log.relative_to(REPO)) if log.is_relative_to(REPO) else str(log),
    )
    (logs / f"{harness}.{task.name}.{repeat}.calls.json").write_text(
        json.dumps([c.to_json() for c in calls], indent=1)
    )
    return record


def environment(args: argparse.Namespace, server_argv: list[str]) -> dict[str, object]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = bool(
        subprocess.run(
            ["git", "status", "--porcelain", "--", "agent_lsp"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    )
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit + (" (agent_lsp modified)" if dirty else ""),
        "cpus": os.cpu_count(),
        "load": os.getloadavg(),
        "python": platform.python_version(),
        "server": " ".join(shlex.quote(a) for a in server_argv),
        "peers": {name: req for name, (req, _cmd) in install.PEERS.items()},
        "timeout": args.timeout,
        "repeat": args.repeat,
    }


def write_report(
    path: Path, records: list[RunRecord], env: dict[str, object], command: str, note: str
) -> None:
    """The run's section goes first below MARKER; the earlier runs' sections stay below it."""
    text = path.read_text() if path.exists() else "# Effectiveness with a real model\n\n"
    head, _, earlier = text.partition(MARKER)
    load = env["load"]
    assert isinstance(load, tuple)
    body = [
        MARKER,
        "",
        f"## Results{': ' + note if note else ''}",
        "",
        f"`{command}`",
        "",
        f"{env['date']}, agent-lsp at {env['commit']}, {env['cpus']} CPUs (load at the end "
        f"{load[0]:.1f}), time limit {env['timeout']:.0f} s a run, {env['repeat']} run(s) each. "
        f"Model server: `{env['server']}`. Peers: "
        + ", ".join(f"`{v}`" for v in dict(env["peers"]).values())  # type: ignore[arg-type]
        + ". Token figures marked ~ include estimates (streamed replies without usage).",
        "",
        harness_table(summarize(records)),
        "",
        "Per task (medians over the runs):",
        "",
        task_table(records),
        "",
        "How each failed run ended (the harness's last words):",
        "",
    ]
    for r in records:
        if not r.solved:
            changed = ", ".join(r.changed) or "nothing"
            body.append(
                f"- {r.harness} / {r.task}: **{r.failure}** ({r.ended}: {r.detail[:160]}); "
                f"changed: {changed}"
            )
    rest = earlier.strip("\n")
    path.write_text(head + "\n".join(body) + "\n" + (f"\n{rest}\n" if rest else ""))


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        tasks = load_tasks(names=args.tasks.split(",") if args.tasks else None)
    except TaskError as exc:
        say(str(exc))
        return 2
    cache: Path = args.cache.expanduser().resolve()
    tools = Toolchain(python_of_bench(), cache)
    try:
        for runner in sorted({t.runner for t in tasks} & {"jest", "vitest"}):
            install.node_modules(runner, cache)
        if args.check_tasks:
            return check_tasks(tasks, tools)
        harnesses = args.harness.split(",")
        executables = {
            PEER_OF[h]: install.peer(PEER_OF[h], cache) for h in harnesses if h in PEER_OF
        }
        server: subprocess.Popen[bytes] | None = None
        restart: Restarter | None = None
        server_argv: list[str] = []
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        logs = RESULTS / f"effect-{stamp}"
        logs.mkdir(parents=True)
        if args.base_url:
            base_url = args.base_url.rstrip("/")
            server_argv = [f"(running at {base_url})"]
        else:
            python, model = install.model_server()
            server, base_url, server_argv = start_server(
                python, model, args.threads, logs / "server.log"
            )
            port = int(urllib.parse.urlsplit(base_url).port or 0)
            restart = Restarter(
                server,
                lambda: start_server(python, model, args.threads, logs / "server.log", port)[0],
            )
    except install.InstallError as exc:
        say(str(exc))
        return 1
    proxy = CountingProxy(base_url)
    proxy.start()
    ctx = Context(
        proxy.base_url, args.model_name, CONTEXT, args.timeout, cache, tools.python, executables
    )
    records: list[RunRecord] = []
    work = Path(tempfile.mkdtemp(prefix="effect-runs-"))
    command = "bench/effect/run.sh " + " ".join(shlex.quote(a) for a in argv)
    out = RESULTS / f"effect-{stamp}.json"
    try:
        for repeat in range(1, args.repeat + 1):
            for task in tasks:
                for harness in harnesses:
                    say(f"{harness} / {task.name} / run {repeat} ...")
                    record = one_run(harness, task, repeat, ctx, tools, proxy, work, logs, restart)
                    records.append(record)
                    say(
                        f"{harness} / {task.name}: {'SOLVED' if record.solved else record.failure} "
                        f"({record.ended}; {record.calls} calls, {record.prompt_tokens}"
                        f"+{record.completion_tokens} tokens, {record.seconds:.0f} s)"
                    )
                    env = environment(args, server_argv)
                    out.write_text(
                        json.dumps(
                            {
                                "command": command,
                                "environment": env,
                                "runs": [r.to_json() for r in records],
                            },
                            indent=1,
                        )
                    )
    except KeyboardInterrupt:
        say("interrupted: reporting the runs done so far")
    finally:
        proxy.stop()
        if restart is not None:
            stop_server(restart.proc)
        elif server is not None:
            stop_server(server)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if records:
        env = environment(args, server_argv)
        write_report(args.report, records, env, command, args.note)
        print(harness_table(summarize(records)))
        say(f"report: {args.report}; runs: {out}; logs: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
