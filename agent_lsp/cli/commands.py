"""The headless subcommands behind the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from adapters import describe_project, detect_toolchain
from adapters.results import report_dict
from agent_lsp.cli.jsonl import JsonChannel, JsonLines, interrupted_line, outcome_line
from agent_lsp.cli.roots import find_root
from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.config.endpoint import endpoint_problem
from agent_lsp.config.schema import Settings
from agent_lsp.config.settings import load_settings
from agent_lsp.errors import AgentLspError
from agent_lsp.fileio import read_disk_text
from agent_lsp.loop.summary import task_totals
from agent_lsp.loop.verify import (
    BadTargetError,
    NotPermittedError,
    format_report,
    run_in_copy,
)
from agent_lsp.memory.checkpoints import CONTINUABLE
from agent_lsp.messages import TaskOutcome, TaskStatus
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.setup import build_policy
from agent_lsp.seams import Model
from agent_lsp.session import Session
from agent_lsp.task import Selection, Task, TaskKind

# 0 done and proved by the tests; 1 not done (failed, stopped, paused, error); 2 usage;
# 3 "done" on the model's word only (no test runner, or the tests were not permitted).
EXIT_OK, EXIT_NOT_DONE, EXIT_USAGE, EXIT_UNVERIFIED = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as the CLI exits then


_LOADED = time.monotonic()


def since_start() -> float:
    """Seconds since this process started: from /proc on Linux (the interpreter's start and
    the imports included), else since this module loaded."""
    try:
        fields = Path("/proc/self/stat").read_text().rpartition(")")[2].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic() - _LOADED
    return age if 0 <= age < 86_400 * 365 else time.monotonic() - _LOADED


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cannot_reach_model(root: Path, settings: Settings, model: Model | None) -> bool:
    """The configured model cannot work (a base URL that is no URL, no key for an endpoint
    that needs one): said on stderr with the next step, before anything starts. A model given
    in code (the demo's scripted one) is never checked."""
    if model is not None:
        return False
    from agent_lsp.cli.doctor import setting_origins

    origin = setting_origins(root)["model.baseUrl"]
    problem = endpoint_problem(settings.model, origin)
    if problem is None:
        return False
    _err(f"agent-lsp: {problem.text}\n  next: {problem.next_step}")
    return True


async def run(
    root: Path,
    instruction: str,
    max_steps: int | None = None,
    model: Model | None = None,
    resume: bool = False,
    hint: str | None = None,
    task_id: str | None = None,
    as_json: bool = False,
    at: str | None = None,
) -> int:
    """Run a task headless; with `resume`, continue the one a crash or restart cut short; with
    `hint`, go on with a stopped task (`task_id`, else the latest) in the same conversation;
    with `as_json`, as JSON lines on stdout (`cli/jsonl.py`), the outcome with its exit code
    last."""
    lines = JsonLines() if as_json else None

    def fail(message: str, code: int = EXIT_USAGE, said: bool = False) -> int:
        if not said:
            _err(message)
        if lines is not None:
            lines.emit("outcome", status="error", summary=message, exit_code=code)
        return code

    def warn(message: str) -> None:
        _err(f"agent-lsp: warning: {message}")
        if lines is not None:
            lines.emit("warning", message=message)

    if not root.is_dir():  # noqa: ASYNC240 - one stat before anything starts
        return fail(f"agent-lsp: {root} is not a folder")
    loaded = load_settings(root)
    for warning in loaded.warnings:
        warn(warning)
    settings = loaded.settings
    if max_steps is not None:
        settings = settings.model_copy(update={"max_steps": max_steps})
    if cannot_reach_model(root, settings, model):
        return fail("agent-lsp: the model cannot be reached as configured", said=True)
    session = Session(root, settings, model)
    channel: TerminalChannel | JsonChannel = (
        TerminalChannel() if lines is None else JsonChannel(root, lines)
    )
    if lines is not None:
        session.memory.log.listeners.append(lines.log_record)
    task = Task(kind=TaskKind.TASK, instruction=instruction)
    if at is not None:
        try:
            path, selection = parse_at(root, at)
        except ValueError as exc:
            await session.aclose()
            return fail(f"agent-lsp run: --at {at}: {exc}")
        task = task.model_copy(update={"path": path, "selection": selection})
    if resume:
        warnings: list[str] = []
        offer = session.pending_resume(warnings)
        for warning in warnings:  # a checkpoint the project brought: ignored, and said so
            warn(warning)
        if offer is None:
            await session.aclose()
            return fail("agent-lsp: no interrupted task to resume")
        task = offer.task
    if hint is not None:
        try:
            task = session.stopped_task(task_id).task
        except AgentLspError as exc:
            await session.aclose()
            return fail(f"agent-lsp: {exc}")
    cut = False
    try:
        outcome = await session.run_task(task, channel, resume=resume, hint=hint, task_id=task_id)
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: the CLI exits 130
        cut = True
        raise
    finally:
        channel.close()  # the waiting spinner off before anything else is printed
        await session.aclose()
        if cut and lines is not None:  # the outcome last, as always
            interrupted_line(lines, EXIT_INTERRUPTED)
    # The totals as the user waited: from the process's start (imports, settings, the
    # session's start-up), not from the task's first step.
    outcome = outcome.model_copy(update={"seconds": max(outcome.seconds, since_start())})
    if outcome.status is not TaskStatus.COMPLETED:
        code = EXIT_NOT_DONE
    else:
        code = EXIT_OK if outcome.verified else EXIT_UNVERIFIED
    if lines is not None:
        outcome_line(lines, outcome, code)
    else:
        _print_outcome(outcome, root)
    return code


def parse_at(root: Path, at: str) -> tuple[str, Selection]:
    """`FILE:LINE` (the cursor on that line) or `FILE:FIRST-LAST` (those lines selected), the
    file absolute or relative to the current folder (where no such file is there, to the
    project's root), inside the project, the lines in the file; `ValueError` says what is
    wrong."""
    name, colon, lines = at.rpartition(":")
    match = re.fullmatch(r"(\d+)(?:-(\d+))?", lines.strip()) if colon else None
    if not name or match is None:
        raise ValueError("give FILE:LINE or FILE:FIRST-LAST (lines from 1)")
    first, last = int(match.group(1)), int(match.group(2) or match.group(1))
    if first < 1 or last < first:
        raise ValueError("lines count from 1, and the last is not before the first")
    given = Path(name).expanduser()
    path = (given if given.is_absolute() else Path.cwd() / given).resolve()
    if not given.is_absolute() and not path.exists() and (root / given).exists():
        path = (root / given).resolve()  # `--root DIR` run from elsewhere: DIR's file
    if not path.is_relative_to(root.resolve()):
        raise ValueError(f"{path} is not in the project {root}")
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    rel = path.relative_to(root.resolve()).as_posix()
    try:
        count = max(1, len(read_disk_text(path).splitlines()))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"cannot read {rel}: {exc}") from exc
    if last > count:
        outside = first if first > count else last
        raise ValueError(f"{rel} has {count} lines: line {outside} is not in it")
    if match.group(2) is None:
        return rel, Selection(line=first - 1, end_line=first - 1)
    return rel, Selection(line=first - 1, end_line=last)


def _root_option(root: Path | None) -> str:
    """` --root DIR` when a command run from the current folder would find another project
    (the demo's temporary copy, `run --root elsewhere`); "" when it finds this one."""
    if root is None:
        return ""
    if find_root(Path.cwd()) == root.resolve():
        return ""
    return f" --root {shlex.quote(str(root.resolve()))}"


def _print_outcome(outcome: TaskOutcome, root: Path | None = None) -> None:
    """The outcome, how to undo or continue it (commands that work from the current folder:
    with `--root` when it is not in the project) and the totals."""
    where = _root_option(root)
    print(f"■ {outcome.status.value} after {outcome.steps} steps: {outcome.summary}", flush=True)
    if outcome.changed_files:
        print(f"  changed: {', '.join(outcome.changed_files)}", flush=True)
        if outcome.task_id:
            print(f"  undo: agent-lsp undo{where} --task {outcome.task_id} [--all]", flush=True)
    if outcome.rechecked and outcome.rechecked not in outcome.summary:
        print(f"  re-checked: {outcome.rechecked}", flush=True)
    print(f"  {task_totals(outcome)}", flush=True)
    if outcome.stop_reason in CONTINUABLE and outcome.task_id:
        print(
            f'  continue: agent-lsp run{where} --continue "your hint" --task {outcome.task_id}',
            flush=True,
        )


async def demo(live: bool = False, dest: Path | None = None) -> int:
    from agent_lsp.demo import TASK, copy_sample, demo_model

    project = copy_sample(dest)
    if live:
        print(f"agent-lsp demo: sample project in {project}; using the configured model")
        return await run(project, TASK)
    print(f"agent-lsp demo: sample project copied to {project}")
    print(
        "agent-lsp demo: a SCRIPTED MODEL stands in for the LLM (fixed replies); the tools, "
        "edits and pytest runs are real. Use --live to use your configured endpoint."
    )
    return await run(project, TASK, model=demo_model())


_TEST_EXTS = (".py", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".go")


def _unknown_target(root: Path, target: str) -> str | None:
    """Why ``target`` names no test of the project (a missing path, or one outside it)."""
    location = target.partition("::")[0].removesuffix("/...")
    looks_like_path = "/" in location or "\\" in location or location.endswith(_TEST_EXTS)
    path = Path(location) if Path(location).is_absolute() else root / location
    if not looks_like_path and not path.exists():
        return None  # a dotted test id or a runner's own pattern
    if not path.resolve().is_relative_to(root.resolve()):
        return f"{target}: outside the project {root}"
    return None if path.exists() else f"{target}: no such file or folder in {root}"


def _relative_target(root: Path, target: str) -> str:
    location, sep, rest = target.partition("::")
    if Path(location).is_absolute():
        location = Path(location).resolve().relative_to(root.resolve()).as_posix() or "."
    return location + sep + rest


def _test_error(as_json: bool, kind: str, message: str, code: int) -> int:
    if as_json:
        error = {"kind": kind, "message": message}
        print(json.dumps({"ok": False, "exit_code": code, "error": error}), flush=True)
    else:
        _err(f"agent-lsp test: {message}")
    return code


async def test(root: Path, targets: Sequence[str], *, as_json: bool = False) -> int:
    """Run the project's tests (or ``targets``): the report as text, or with ``as_json`` as
    one JSON object (`adapters.results.report_dict` and ``exit_code``); exit 0 all passed,
    1 failures/errors/no tests or not permitted (no OS sandbox, and nobody said yes), 2 bad
    input (no test runner, unknown target, an option given as a target)."""
    loaded = load_settings(root)
    tests = loaded.settings.tests
    adapter = detect_toolchain(root, tests.args, tests.command)
    if adapter is None:
        return _test_error(as_json, "no_runner", describe_project(root), EXIT_USAGE)
    unknown = [why for why in (_unknown_target(root, t) for t in targets) if why]
    if unknown:
        return _test_error(as_json, "unknown_target", "; ".join(unknown), EXIT_USAGE)
    safety = build_policy(root, loaded.settings)
    relative = [_relative_target(root, t) for t in targets]
    channel = TerminalChannel(sys.stderr if as_json else None)  # JSON on stdout stays whole
    gate = CommandPolicy(channel, engine=safety.engine)
    try:
        report = await run_in_copy(root, adapter, safety, gate, relative, timeout=600)
    except BadTargetError as exc:
        return _test_error(as_json, "unknown_target", str(exc), EXIT_USAGE)
    except NotPermittedError as exc:
        return _test_error(as_json, "not_permitted", str(exc), EXIT_NOT_DONE)
    finally:
        channel.close()
    code = EXIT_OK if report.ok else EXIT_NOT_DONE
    if as_json:
        print(json.dumps(report_dict(report) | {"exit_code": code}), flush=True)
    else:
        print(format_report(report), flush=True)
    return code
