"""Project tools (`.agent-lsp/tools.toml`, see `agent_lsp.tools.project_spec`): each a
model-facing tool whose arguments are typed by its declaration. A call becomes an argv (each
value one element, never a shell string; `path` values through the path guard), decided by the
same policy as `run_command` (the command line shown is that argv, quoted) and run in the same
confined shell. A repository's tools.toml counts only in a trusted workspace."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent_lsp.errors import WorkspaceError
from agent_lsp.memory.layout import Layout
from agent_lsp.messages import AgentEvent, EventKind, ToolResult
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.reads import Refused
from agent_lsp.tools.project_spec import (
    PLACEHOLDER,
    ProjectToolsError,
    ToolDecl,
    args_model,
    parse_project_tools,
)

__all__ = ["DeclaredTools", "ProjectTool", "argv_for", "read_project_tools"]

UNTRUSTED = (
    "the project's tools (.agent-lsp/tools.toml) are not used until you trust this workspace "
    "(agent-lsp trust)"
)


@dataclass(frozen=True)
class DeclaredTools:
    tools: dict[str, ToolDecl]
    warnings: tuple[str, ...] = ()


def read_project_tools(root: Path, trusted: bool, reserved: set[str]) -> DeclaredTools:
    """The project tools in effect for `root`: none in an untrusted workspace (said in
    `warnings` when the file exists), none when the file cannot be used (said why)."""
    layout = Layout(root)
    try:
        text = layout.reads.read_bytes(layout.tools_file, "").decode("utf-8")
    except FileNotFoundError:
        return DeclaredTools({})
    except (OSError, UnicodeDecodeError, Refused) as exc:
        return DeclaredTools({}, (f".agent-lsp/tools.toml cannot be read ({exc}); not used",))
    if not trusted:
        return DeclaredTools({}, (UNTRUSTED,))
    try:
        return DeclaredTools(parse_project_tools(text, reserved))
    except ProjectToolsError as exc:
        return DeclaredTools({}, (f"{exc}; no project tool is used",))


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def argv_for(decl: ToolDecl, values: dict[str, str]) -> list[str]:
    """The command with each `{arg}` replaced (within its element); an element naming an
    argument not in `values` is left out."""
    out: list[str] = []
    for part in decl.command:
        if any(name not in values for name in PLACEHOLDER.findall(part)):
            continue
        out.append(PLACEHOLDER.sub(lambda m: values[m.group(1)], part))
    return out


class ProjectTool:
    self_gated = True  # decided where run_command is: on the command line it runs
    slow = True  # the question and its own timeout, not the tool timeout, bound it

    def __init__(
        self,
        name: str,
        decl: ToolDecl,
        workspace: Workspace,
        shell: ConfinedShell,
        policy: CommandPolicy,
    ) -> None:
        self.name = name
        self.decl = decl
        self.description = (
            f"{decl.description} (a project tool of .agent-lsp/tools.toml: runs "
            f"`{shlex.join(decl.command)}`; the user's permission rules apply as to run_command)"
        )
        self.args_model = args_model(name, decl)
        self.read_only = decl.read_only
        self.workspace = workspace
        self.shell = shell
        self.policy = policy

    def values(self, args: BaseModel) -> dict[str, str]:
        """Each given argument as the text of its argv element; `WorkspaceError` for a path
        outside the project or a value that would be read as an option."""
        out: dict[str, str] = {}
        given: dict[str, Any] = args.model_dump(exclude_none=True)
        for arg, value in given.items():
            spec = self.decl.args[arg]
            text = _text(value)
            if spec.type in ("string", "path") and text.startswith("-"):
                raise WorkspaceError(f"{arg}: a value may not start with '-' (read as an option)")
            if spec.type == "path":
                text = self.workspace.relative(self.workspace.resolve(text))
                if text.startswith("-"):  # `./-o/tmp/x` resolves to `-o/tmp/x`
                    text = f"./{text}"
            out[arg] = text
        return out

    async def run(self, args: BaseModel) -> ToolResult:
        root = self.workspace.root
        for gate in (self.name, "run_command"):  # the tool rules naming it, or run_command
            ruled = await self.policy.check_tool(gate, read_only=True)  # (rules only)
            if not ruled.allowed:
                return ToolResult.fail(f"not run: {ruled.decided_by}", decided_by=ruled.decided_by)
        try:
            argv = argv_for(self.decl, self.values(args))
        except WorkspaceError as exc:
            return ToolResult.fail(f"not run: {exc}")
        command = shlex.join(argv)
        mode = self.shell.sandbox.status().mode
        decision, evaluation = await self.policy.decide(command, root, mode)
        meta: dict[str, Any] = {"decided_by": decision.decided_by, "argv": argv, "sandbox": mode}
        if not decision.allowed:
            return ToolResult.fail(f"not run: {decision.decided_by}", **meta)
        if notice := self.shell.sandbox.notice():
            await self.workspace.channel.report(AgentEvent(kind=EventKind.MESSAGE, message=notice))
        shell = self.shell.but(network=evaluation.network, show_secrets=evaluation.secret)
        result = await shell.run(argv, cwd=root, timeout=self.decl.timeout)
        meta |= {"exit_code": result.exit_code, "duration": round(result.duration, 3)}
        if result.timed_out:
            return ToolResult.fail(
                f"timed out after {self.decl.timeout:.0f} s", output=result.output, **meta
            )
        if result.exit_code != 0:
            return ToolResult.fail(f"exit code {result.exit_code}", output=result.output, **meta)
        return ToolResult.ok(result.output or "(no output)", **meta)
