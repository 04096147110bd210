"""`run_tests`: the project's test suite through its toolchain adapter, on the editor's text."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.loop.verify import BadTargetError, NotPermittedError, Verifier, format_report
from agent_lsp.messages import ToolResult
from agent_lsp.project.workspace import Workspace


class RunTestsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    targets: list[str] = Field(
        default_factory=list[str],
        description="Test ids or paths inside the project to run (e.g. "
        "tests/test_x.py::test_y); never options; empty = the whole suite.",
    )


class RunTestsTool:
    name = "run_tests"
    description = (
        "Run the project's tests (the runner is detected) against the current editor text and "
        "report pass/fail counts and each failure with file and line."
    )
    args_model = RunTestsArgs
    read_only = False  # runs the project's code (inside the sandbox); never at L0
    self_gated = True  # the verifier asks, once per task, for every test run

    def __init__(self, workspace: Workspace, verifier: Verifier | None) -> None:
        self.workspace = workspace
        self.verifier = verifier

    async def run(self, args: RunTestsArgs) -> ToolResult:
        if self.verifier is None:
            return ToolResult.fail("no test runner found for this project")
        try:
            report = await self.verifier.run(self.workspace, args.targets)
        except (NotPermittedError, BadTargetError) as exc:
            return ToolResult.fail(str(exc))
        meta = {
            "passed": report.passed,
            "failed": report.failed,
            "errors": report.errors,
            "skipped": report.skipped,
            "ok": report.ok,
        }
        text = format_report(report, root=self.workspace.root)
        if report.ok:
            return ToolResult.ok(text, **meta)
        return ToolResult.fail(
            f"tests did not pass: {report.summary(with_hint=False)}", output=text, **meta
        )
