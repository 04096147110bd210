"""`run_command`: a shell command in the project root — classified, allowed / asked / denied
by the safety policy, then run confined (`agent_lsp.safety.confined`): inside the OS sandbox
where the machine has one, always with the sandbox environment (no API keys)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.messages import AgentEvent, EventKind, ToolResult
from agent_lsp.permissions import CommandPolicy
from agent_lsp.safety.confined import ConfinedShell
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
        "Read-only commands run at once; others need the user's permission. Commands run "
        "sandboxed: only the project is writable (not .git or .agent-lsp), the home folder "
        "is private, secret files read as empty, and there is no network."
    )
    args_model = RunCommandArgs
    read_only = False

    def __init__(
        self,
        workspace: Workspace,
        shell: ConfinedShell,
        policy: CommandPolicy,
        timeout: float,
    ) -> None:
        self.workspace = workspace
        self.shell = shell
        self.policy = policy
        self.timeout = timeout

    async def run(self, args: RunCommandArgs) -> ToolResult:
        root = self.workspace.root
        mode = self.shell.sandbox.status().mode
        decision, evaluation = await self.policy.decide(args.command, root, mode)
        meta: dict[str, Any] = {
            "decided_by": decision.decided_by,
            "decision": decision.model_dump(mode="json"),
            "sandbox": mode,
        }
        if not decision.allowed:
            return ToolResult.fail(
                f"not run: {decision.decided_by}. Do without this command or ask the user.", **meta
            )
        if notice := self.shell.sandbox.notice():
            await self.workspace.channel.report(AgentEvent(kind=EventKind.MESSAGE, message=notice))
        timeout = args.timeout or self.timeout
        shell = self.shell.but(network=evaluation.network, show_secrets=evaluation.secret)
        result = await shell.run_script(args.command, cwd=root, timeout=timeout)
        meta |= {"exit_code": result.exit_code, "duration": round(result.duration, 3)}
        if result.timed_out:
            return ToolResult.fail(
                f"timed out after {timeout:.0f} s (process group killed)",
                output=result.output,
                **meta,
            )
        if result.exit_code != 0:
            return ToolResult.fail(f"exit code {result.exit_code}", output=result.output, **meta)
        return ToolResult.ok(result.output or "(no output)", **meta)
