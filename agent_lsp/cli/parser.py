"""The command line of `agent-lsp`: its commands and their options."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from agent_lsp import __version__
from agent_lsp.cli.roots import ROOT_MARKERS


class UsageExit(SystemExit):
    """A command line the parser cannot read: said on stderr with the usage (as argparse
    says it), exit 2; `text` is the one line that says what is wrong."""

    def __init__(self, text: str) -> None:
        super().__init__(2)
        self.text = text


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        text = f"{self.prog}: error: {message}"
        self.print_usage(sys.stderr)
        print(text, file=sys.stderr, flush=True)
        raise UsageExit(text)


def build_parser(doc: str) -> argparse.ArgumentParser:
    """The command line's parser; `doc`, the description (ROOT_MARKERS spelled out)."""
    about = doc.replace("ROOT_MARKERS", ", ".join(ROOT_MARKERS))
    parser = _Parser(prog="agent-lsp", description=about)
    parser.add_argument("--version", action="version", version=f"agent-lsp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", type=int, metavar="PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument(
        "--wrap",
        action="store_true",
        help="proxy mode: `serve --wrap -- CMD...` runs your language server behind agent-lsp",
    )

    acp = sub.add_parser(
        "acp", help="serve the Agent Client Protocol on stdio (Zed, agent-shell, CodeCompanion)"
    )
    acp.add_argument(
        "--root",
        dest="pinned_root",
        metavar="DIR",
        type=Path,
        default=None,
        help="the workspace of every session (default: the cwd each session/new names)",
    )

    run = sub.add_parser(
        "run",
        help="run a task headless; exit 0 only if it was completed and the tests proved it "
        "(1 not done, 3 completed unverified)",
    )
    run.add_argument("task", nargs="?", help="what to do, in plain words")
    _project_args(run)
    run.add_argument("--max-steps", type=int, help="override maxSteps")
    run.add_argument(
        "--resume", action="store_true", help="continue the task a crash or restart cut short"
    )
    run.add_argument(
        "--at",
        metavar="FILE:LINE[-LINE]",
        help="where you are: the task sees that line (the cursor) or those lines (a selection); "
        "with a new task only",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line on stdout for each event (model calls with tokens, tool "
        "calls, edits with their diff, test results, questions and answers), the outcome with "
        "its exit code last",
    )
    run.add_argument(
        "--team",
        action="store_true",
        help="team mode: a planner, parallel workers and a reviewer (see docs/architecture.md)",
    )
    run.add_argument(
        "--continue",
        dest="hint",
        metavar="HINT",
        help="go on with a stopped task (paused, max steps, the model gave up) in the same "
        'conversation, your HINT its next message: --continue "try X"',
    )
    run.add_argument(
        "--task",
        dest="task_id",
        help="with --continue: the task id (default: the latest stopped task)",
    )

    demo = sub.add_parser("demo", help="fix a bundled sample project (scripted model, no API key)")
    demo.add_argument("--live", action="store_true", help="use the configured model instead")
    demo.add_argument("--dir", type=Path, help="copy the sample here instead of a temp folder")

    test = sub.add_parser(
        "test",
        help="run the project's tests through the adapter (exit 0 all passed, 1 not)",
        description="Run the project's tests (every package of a monorepo) or the given "
        "targets, each with the package that owns it.",
        epilog="exit codes: 0 all tests passed; 1 failures, errors, a timeout or no tests ran, "
        "or not permitted (no OS sandbox and no yes to the question); 2 bad input (no test "
        "runner found, a target that is not in the project or is an option). With --json "
        "stdout is one JSON object: ok, exit_code, runner, command, duration, totals (passed, "
        "failed, errors, skipped, total), tests (the failing ones: id, status, path, line, "
        "message), packages (the same per package or toolchain) and hint; on bad input or "
        "when not permitted {ok: false, exit_code, error: {kind, message}}.",
    )
    _project_args(test)
    test.add_argument("targets", nargs="*", help="test ids or paths (default: all)")
    test.add_argument(
        "--json", action="store_true", help="print the report as one JSON object (for CI, editors)"
    )

    doctor = sub.add_parser("doctor", help="show settings, toolchain and model endpoint status")
    _project_args(doctor)

    log = sub.add_parser("log", help="show a session log (the latest by default)")
    _project_args(log)
    log.add_argument("-f", "--follow", action="store_true", help="keep printing new events")
    log.add_argument("--session", help="a session id (or a unique part of it)")
    log.add_argument("--list", action="store_true", help="list the sessions")
    log.add_argument("--json", action="store_true", help="print the raw JSON lines")

    memory = sub.add_parser("memory", help="list, show, search or forget experiences")
    memory.add_argument("action", choices=["list", "show", "forget", "search"])
    memory.add_argument("name", nargs="?", help="an experience file (or a unique part of it)")
    _project_args(memory)

    undo = sub.add_parser("undo", help="revert the agent's last step (or more) of a task")
    _project_args(undo)
    undo.add_argument("--steps", type=int, default=1, help="how many steps (default 1)")
    undo.add_argument("--all", action="store_true", help="every step of the task")
    undo.add_argument("--task", help="the task id (default: the latest with changes)")
    undo.add_argument("--force", action="store_true", help="overwrite later changes")

    improve = sub.add_parser(
        "improve",
        help="let the agent propose a change to its own setup for this project (settings, "
        "prompt and tool notes); shown before it is applied, logged, revertible",
        epilog="exit codes: 0 applied (or listed, reverted); 1 none proposed, rejected, "
        "refused or rolled back by its self-check; 2 bad input.",
    )
    improve.add_argument("request", nargs="?", help="what to improve, in plain words")
    _project_args(improve)
    improve.add_argument("--yes", action="store_true", help="apply without asking")
    improve.add_argument("--list", action="store_true", help="list the logged improvements")
    improve.add_argument("--revert", metavar="ID", help="revert one improvement")

    trust = sub.add_parser(
        "trust", help="trust this workspace's .agent-lsp/config.toml and policy.toml allow rules"
    )
    _project_args(trust)
    trust.add_argument("--remove", action="store_true", help="stop trusting it")
    trust.add_argument("--list", action="store_true", help="list the trusted workspaces")
    return parser


def _project_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        type=Path,
        default=None,
        help="project root (default: the nearest folder upwards holding .agent-lsp, "
        "pyproject.toml, setup.py, package.json, go.mod or .git; else the current folder)",
    )
