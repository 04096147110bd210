"""The harnesses, each run the way its users run it, against the same endpoint (the counting
proxy) in a fresh copy of the task: agent-lsp headless (`agent-lsp run`) and through its
language server ("Ask agent to fix" / `agentLsp.runTask`, driven by editor.py), mini-swe-agent
(text and tool-calling modes) and aider. Every run has a private HOME, the same PATH (the
bench's Python, with pytest, first) and a time limit; its process group is killed at the end.

Each returns how the run ended in the harness's own terms, mapped to a few words:
claimed done, budget, loop, malformed, gave up, error, timeout, exited."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.effect.tasks import Task, shell_test_command

REPO = Path(__file__).resolve().parents[2]
STEP_LIMIT = 25  # agent-lsp's default maxSteps; mini-swe-agent gets the same step limit
OUTCOME = re.compile(r"■ (\w+) after (\d+) steps?: (.*)")
# agent-lsp's tool results for a call it could not run as sent (agent_lsp/loop/toolbox.py).
MALFORMED = re.compile(r"^(unknown tool|arguments for \S+ are not valid JSON|invalid arguments)")


@dataclass
class Context:
    base_url: str  # the proxy's, with /v1
    model: str
    context_window: int
    timeout: float
    cache: Path
    python: str  # the bench's Python (agent-lsp's venv, with pytest)
    executables: dict[str, Path]  # peer name -> its command


@dataclass
class RunEnd:
    ended: str
    detail: str
    exit_code: int | None
    malformed: int = 0
    steps: int | None = None
    output: str = ""


def task_text(task: Task) -> str:
    """What every harness is told: the task and how the tests run."""
    return f"{task.text}\nThe tests run with: {shell_test_command(task.runner)}"


def base_env(home: Path, ctx: Context) -> dict[str, str]:
    drop = ("OPENAI_", "AGENT_LSP_", "PYTEST_", "AIDER_", "MSWEA_", "LITELLM_", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        PATH=f"{Path(ctx.python).parent}{os.pathsep}{env.get('PATH', '')}",
        GOCACHE=str(ctx.cache / "go" / "build"),
        GOPATH=str(ctx.cache / "go" / "path"),
        GOPROXY="off",
        GOFLAGS="",
        GOTOOLCHAIN="local",
        NO_COLOR="1",
        TERM="dumb",
        # litellm (both peers) fetches its price list from GitHub at start, retrying for seconds
        # where there is no network; its bundled copy is the same list.
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    return env


def run_process(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, log: Path
) -> tuple[int | None, str]:
    """(exit code or None when killed at `timeout`, the output's tail); all output in `log`."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError):  # what it left running (test runs ...)
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return code, log.read_text(errors="replace")[-6000:]


# --- agent-lsp ------------------------------------------------------------------------------


def agent_lsp_home(home: Path, ctx: Context) -> dict[str, str]:
    """A HOME whose user config points agent-lsp at the proxy (otherwise its defaults)."""
    env = base_env(home, ctx)
    config = home / ".config" / "agent-lsp"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        "[model]\n"
        f'baseUrl = "{ctx.base_url}"\n'
        f'name = "{ctx.model}"\n'
        'apiKey = "none"\n'
        f"contextWindow = {ctx.context_window}\n"
        "timeout = 900\n"
        "maxRetries = 1\n"
        # A fresh copy per run: what the memory would distil can never help a later run.
        "[memory]\n"
        "distill = false\n"
    )
    return env


def agent_lsp_malformed(root: Path) -> int:
    """Tool calls agent-lsp could not run as the model sent them (its session log)."""
    count = 0
    for log in (root / ".agent-lsp" / "logs").glob("*.jsonl"):
        for line in log.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("kind") == "tool_call" and MALFORMED.match(str(entry.get("error") or "")):
                count += 1
    return count


def agent_lsp_end(status: str, summary: str) -> str:
    """agent-lsp's outcome in the bench's words."""
    if status == "completed":
        return "claimed done"
    if status == "error":
        return "error"
    if status == "cancelled":
        return "timeout"
    lowered = summary.lower()
    if "max steps" in lowered or "token budget" in lowered or "time budget" in lowered:
        return "budget"
    if "loop" in lowered or "repeat" in lowered:
        return "loop"
    if "model stopped" in lowered or status == "failed":
        return "gave up"
    return status


def run_agent_lsp(task: Task, workdir: Path, home: Path, ctx: Context, log: Path) -> RunEnd:
    env = agent_lsp_home(home, ctx)
    argv = [ctx.python, "-m", "agent_lsp", "run", task_text(task), "--root", str(workdir)]
    code, output = run_process(argv, workdir, env, ctx.timeout, log)
    outcomes = [m for line in output.splitlines() if (m := OUTCOME.search(line))]
    malformed = agent_lsp_malformed(workdir)
    if code is None:
        return RunEnd("timeout", f"killed after {ctx.timeout:.0f} s", None, malformed, None, output)
    if not outcomes:
        return RunEnd("error", f"no outcome line (exit {code})", code, malformed, None, output)
    status, steps, summary = outcomes[-1][1], int(outcomes[-1][2]), outcomes[-1][3]
    end = agent_lsp_end(status, summary)
    return RunEnd(end, f"{status}: {summary}"[:300], code, malformed, steps, output)


def run_agent_lsp_editor(task: Task, workdir: Path, home: Path, ctx: Context, log: Path) -> RunEnd:
    import asyncio

    from bench.effect.editor import drive

    env = agent_lsp_home(home, ctx)
    started = time.monotonic()
    try:
        result = asyncio.run(drive(task, workdir, env, ctx.timeout, task_text(task)))
    except Exception as exc:  # the server or the client broke: the run's end, said in one line
        log.write_text(f"{type(exc).__name__}: {exc}")
        return RunEnd("error", f"{type(exc).__name__}: {exc}"[:300], None, 0, None, str(exc))
    log.write_text(result.transcript)
    malformed = agent_lsp_malformed(workdir)
    if result.status is None:
        return RunEnd(
            "timeout",
            f"no outcome after {time.monotonic() - started:.0f} s ({result.detail})",
            None,
            malformed,
            None,
            result.transcript[-6000:],
        )
    end = agent_lsp_end(result.status, result.detail)
    return RunEnd(
        end,
        f"{result.status}: {result.detail}"[:300],
        0,
        malformed,
        result.steps,
        result.transcript[-6000:],
    )


# --- mini-swe-agent -------------------------------------------------------------------------


def mini_end(trajectory: Path) -> tuple[str, str, int, int | None]:
    """(ended, exit status, malformed replies, model calls) from mini-swe-agent's trajectory."""
    try:
        data = json.loads(trajectory.read_text())
    except (OSError, ValueError):
        return "error", "no trajectory", 0, None
    info = data.get("info") or {}
    status = str(info.get("exit_status") or "")
    calls = (info.get("model_stats") or {}).get("api_calls")
    malformed = 0
    for message in data.get("messages") or []:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if message.get("role") in ("user", "tool") and re.search(
            r"Format error:|Tool call error:|before you produced", text
        ):
            malformed += 1
    ended = {
        "Submitted": "claimed done",
        "LimitsExceeded": "budget",
        "TimeExceeded": "timeout",
        "RepeatedFormatError": "malformed",
        "FormatError": "malformed",
    }.get(status, "error" if status else "exited")
    return ended, status, malformed, calls if isinstance(calls, int) else None


def run_mini(mode: str) -> Callable[[Task, Path, Path, Context, Path], RunEnd]:
    """mini-swe-agent in `text` mode (its mini_textbased config) or `tools` mode (its default
    config: one bash tool)."""

    def run(task: Task, workdir: Path, home: Path, ctx: Context, log: Path) -> RunEnd:
        env = base_env(home, ctx)
        env.update(
            OPENAI_API_BASE=ctx.base_url,
            OPENAI_API_KEY="none",
            MSWEA_COST_TRACKING="ignore_errors",
            MSWEA_CONFIGURED="true",
        )
        trajectory = log.with_suffix(".traj.json")
        config = ["-c", "mini_textbased.yaml"] if mode == "text" else ["-c", "mini.yaml"]
        klass = ["--model-class", "litellm_textbased"] if mode == "text" else []
        argv = [
            str(ctx.executables["mini"]),
            "-m",
            f"openai/{ctx.model}",
            *klass,
            *config,
            "-c",
            f"agent.step_limit={STEP_LIMIT}",
            "-t",
            task_text(task),
            "-y",
            "--exit-immediately",
            "-l",
            "0",
            "-o",
            str(trajectory),
        ]
        code, output = run_process(argv, workdir, env, ctx.timeout, log)
        ended, status, malformed, calls = mini_end(trajectory)
        if code is None:
            ended = "timeout"
        return RunEnd(ended, status or f"exit {code}", code, malformed, calls, output)

    return run


# --- aider ----------------------------------------------------------------------------------

AIDER_MALFORMED = re.compile(
    r"did not conform to the edit format|SEARCH/REPLACE block failed", re.I
)
AIDER_BUDGET = re.compile(r"Only \d+ reflections allowed", re.I)
AIDER_TOKENS = re.compile(r"Tokens: ([\d.]+)(k?) sent, ([\d.]+)(k?) received")


def aider_tokens(output: str) -> tuple[int, int]:
    """What aider itself reports it sent and received (its own count, for comparison)."""

    def number(value: str, kilo: str) -> int:
        return round(float(value) * (1000 if kilo else 1))

    found = AIDER_TOKENS.findall(output)
    return sum(number(a, b) for a, b, _, _ in found), sum(number(c, d) for _, _, c, d in found)


def aider_end(output: str, code: int | None) -> tuple[str, int]:
    malformed = len(AIDER_MALFORMED.findall(output))
    if code is None:
        return "timeout", malformed
    if AIDER_BUDGET.search(output):
        return "budget", malformed
    if code != 0:
        return "error", malformed
    return "exited", malformed


def run_aider(task: Task, workdir: Path, home: Path, ctx: Context, log: Path) -> RunEnd:
    env = base_env(home, ctx)
    reads = [arg for name in task.tests for arg in ("--read", name)]
    argv = [
        str(ctx.executables["aider"]),
        "--model",
        f"openai/{ctx.model}",
        "--openai-api-base",
        ctx.base_url,
        "--openai-api-key",
        "none",
        "--yes-always",
        "--no-git",
        "--auto-test",
        "--test-cmd",
        shell_test_command(task.runner),
        "--no-check-update",
        "--no-show-model-warnings",
        "--no-show-release-notes",
        "--analytics-disable",
        "--no-pretty",
        "--no-fancy-input",
        "--message",
        task_text(task),
        *reads,
        *task.files,
    ]
    code, output = run_process(argv, workdir, env, ctx.timeout, log)
    ended, malformed = aider_end(output, code)
    sent, received = aider_tokens(output)
    detail = f"exit {code}; aider's own count: {sent} tokens sent, {received} received"
    return RunEnd(ended, detail, code, malformed, None, output)


Runner = Callable[[Task, Path, Path, Context, Path], RunEnd]
HARNESSES: dict[str, Runner] = {
    "agent-lsp": run_agent_lsp,
    "agent-lsp-editor": run_agent_lsp_editor,
    "mini-text": run_mini("text"),
    "mini-tools": run_mini("tools"),
    "aider": run_aider,
}
PEER_OF = {"mini-text": "mini", "mini-tools": "mini", "aider": "aider"}


def python_of_bench() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable
