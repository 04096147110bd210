"""`run_command`: a shell command in the project root — classified, allowed / asked / denied
by the safety policy, then run confined (`agent_lsp.safety.confined`): inside the OS sandbox
where the machine has one, always with the sandbox environment (no API keys)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.messages import AgentEvent, EventKind, ToolResult
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.tools.readiness import Readiness, parse_ready, recognise
from agent_lsp.tools.readiness_report import readiness_result
from agent_lsp.tools.readiness_run import run_until_ready

READY_WAIT = 30.0  # seconds a readiness check waits unless `timeout` says otherwise


class RunCommandArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, description="A bash command line, run in the root.")
    timeout: float | None = Field(
        None,
        gt=0,
        le=600,
        description="Seconds before the command is killed (default 60); for a readiness "
        "check, how long to wait for it to be ready (default 30).",
    )
    until_ready: bool | None = Field(
        None,
        description="true: run as a readiness check (start, wait until ready, stop) even if "
        "not recognised as a server or watcher; false: run to completion even if it looks "
        "like one.",
    )
    ready: str | None = Field(
        None,
        min_length=1,
        description="What ready means (implies a readiness check): a port number that "
        "accepts connections, or an extended regex for a line of its output.",
    )


class RunCommandTool:
    name = "run_command"
    description = (
        "Run a shell command in the project root (files on disk, not unsaved buffers). "
        "Read-only commands run at once; others need the user's permission. Commands run "
        "sandboxed: only the project is writable (not .git or .agent-lsp), the home folder "
        "is private, secret files read as empty, and there is no network. Dev servers and "
        "watchers (npm run dev, vite, flask run, uvicorn, python -m http.server, tsc --watch "
        "...) run as a readiness check: started, watched until their port accepts "
        "connections or they print a ready line (at most 30 s or `timeout`), then stopped; "
        "the result says whether and when they were ready, the output tail, and the exit "
        "code if they died first."
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
        try:
            ready = parse_ready(args.ready) if args.ready is not None else None
        except ValueError as exc:
            return ToolResult.fail(f"not run: {exc}")
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
        check = self._readiness(args, ready, shell)
        if check is not None:
            wait = args.timeout or min(self.timeout, READY_WAIT)
            private_net = shell.sandboxed and not (evaluation.network or shell.sandbox.network)
            outcome, raw = await run_until_ready(
                shell, args.command, root, check, any_port=private_net, wait=wait
            )
            return readiness_result(outcome, raw, check, wait, meta)
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

    def _readiness(
        self,
        args: RunCommandArgs,
        ready: tuple[tuple[int, ...], str | None] | None,
        shell: ConfinedShell,
    ) -> Readiness | None:
        """How to run the command as a readiness check; None to run it to completion."""
        if args.until_ready is False:
            return None
        found = recognise(args.command, self.workspace.root, shell.environment())
        if found is None and not (args.until_ready or ready):
            return None
        check = found or Readiness("as asked")
        if ready is not None:
            ports, line = ready
            check = Readiness(
                check.reason, ports or check.ports, check.line if line is None else line
            )
        return check
