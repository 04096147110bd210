"""The `tests.command` setting: the command that runs a project's tests when detection cannot
find its runner (a wrapper script, a Makefile target). A command that runs jest or vitest is
read by their adapters (its options kept, results per test); any other command is judged by
its exit code: one passing or one failing check, with its output."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from adapters.base import ToolchainAdapter
from adapters.jest_runner import JestRunner
from adapters.jsscript import invokes
from adapters.node import runs_node_test
from adapters.nodetest_runner import NodeTestRunner
from adapters.results import TestFailure, TestReport, cap_text
from adapters.shell import Shell
from adapters.vitest_runner import VitestRunner

__all__ = ["CommandRunner", "command_adapter"]

_OUTPUT_LIMIT = 20_000


class CommandRunner:
    """Runs the user's test command with ``sh -c`` in the folder the tests run in; exit 0 is
    one passed check, anything else one failure. Targets cannot be passed to an arbitrary
    command: a run with targets runs the whole command too."""

    name: str = "command"

    def __init__(self, command: str) -> None:
        self.command = command

    def detect(self, root: Path) -> bool:
        del root
        return True

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        del project_root, targets
        started = time.monotonic()
        result = await shell.run(
            ("sh", "-c", self.command), cwd=run_root, timeout=timeout, env=dict(os.environ)
        )
        ok = result.exit_code == 0 and not result.timed_out
        failures: tuple[TestFailure, ...] = ()
        if not ok:
            why = (
                f"timed out after {timeout:g}s"
                if result.timed_out
                else (f"exited with {result.exit_code}")
            )
            tail = "\n".join(result.output.rstrip().splitlines()[-1:])
            message = f"`{self.command}` {why}" + (f": {tail}" if tail else "")
            failures = (
                TestFailure(self.command, None, None, message, cap_text(result.output, 4000)),
            )
        return TestReport(
            runner=f"command `{self.command}`",
            command=result.argv,
            passed=1 if ok else 0,
            failed=0 if ok else 1,
            errors=0,
            skipped=0,
            duration=time.monotonic() - started,
            failures=failures,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            output=cap_text(result.output, _OUTPUT_LIMIT),
        )


def command_adapter(command: str) -> ToolchainAdapter:
    """The adapter for the `tests.command` setting: jest's, vitest's or node --test's when the
    command runs one of them (its options then count as the project's test script), else
    `CommandRunner`."""
    if invokes(command, "vitest"):
        vitest = VitestRunner()
        vitest.script = command
        return vitest
    if invokes(command, "jest"):
        jest = JestRunner()
        jest.script = command
        return jest
    if runs_node_test(command):
        node = NodeTestRunner()
        node.script = command
        return node
    return CommandRunner(command)
