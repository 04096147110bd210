"""`run_command`: a shell command in the project root, with the user's permission."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from adapters import PosixShell
from agent_lsp.messages import ToolResult
from agent_lsp.permissions import CommandPolicy
from agent_lsp.workspace import Workspace


class RunCommandArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, description="A bash command line, run in the root.")
    timeout: float | None = Field(
        None, gt=0, le=600, description="Seconds before the command is killed (default 60)."
    )


class RunCommandTool:
    name = "run_command"
    description = (
        "Run a shell command in the project root (files on disk, not unsaved buffers). "
        "Read-only commands run at once; others need the user's permission."
    )
    args_model = RunCommandArgs
    read_only = False

    def __init__(
        self, workspace: Workspace, shell: PosixShell, policy: CommandPolicy, timeout: float
    ) -> None:
        self.workspace = workspace
        self.shell = shell
        self.policy = policy
        self.timeout = timeout

    async def run(self, args: RunCommandArgs) -> ToolResult:
        allowed, decided_by = await self.policy.allows(args.command)
        if not allowed:
            return ToolResult.fail(
                f"not run: {decided_by}. Do without this command or ask the user.",
                decided_by=decided_by,
            )
        result = await self.shell.run_script(
            args.command, cwd=self.workspace.root, timeout=args.timeout or self.timeout
        )
        meta = {
            "exit_code": result.exit_code,
            "decided_by": decided_by,
            "duration": round(result.duration, 3),
        }
        if result.timed_out:
            return ToolResult.fail(
                f"timed out after {args.timeout or self.timeout:.0f} s (process group killed)",
                output=result.output,
                **meta,
            )
        if result.exit_code != 0:
            return ToolResult.fail(f"exit code {result.exit_code}", output=result.output, **meta)
        return ToolResult.ok(result.output or "(no output)", **meta)
