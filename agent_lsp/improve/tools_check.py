"""The self-check of the project tools an improvement adds or changes: the after-state of
`.agent-lsp/tools.toml` parses, every tool's schema builds (as the model would see it), and a
changed tool declared read-only that needs no argument runs once — only if the policy lets it
run without asking (it is read-only by the classifier's judgement too), confined to reading the
project; a failure rolls the improvement back."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from pydantic import BaseModel

from agent_lsp.improve.files import ImprovementError, read_current
from agent_lsp.improve.patch import ImprovementPatch
from agent_lsp.loop.toolbox import tool_spec
from agent_lsp.memory.layout import Layout
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.policy import CommandPolicy, Unattended
from agent_lsp.safety.sandbox import Confinement
from agent_lsp.safety.setup import PolicySetup
from agent_lsp.tools import RESERVED_NAMES
from agent_lsp.tools.project import argv_for
from agent_lsp.tools.project_spec import (
    ProjectToolsError,
    ToolDecl,
    args_model,
    parse_project_tools,
)

__all__ = ["check_tools", "declared_tools"]


class _Named(BaseModel):
    name: str
    description: str
    args_model: type[BaseModel]


def declared_tools(copy: Path, patch: ImprovementPatch, trusted: bool) -> dict[str, ToolDecl]:
    """The project tools of the copy (its after-state); every schema built."""
    if patch.project_tools and not trusted:
        raise ImprovementError(
            "project tools are used only in a trusted workspace: run `agent-lsp trust` first"
        )
    layout = Layout(copy)
    try:
        declared = parse_project_tools(
            read_current(layout, layout.tools_file) or "", RESERVED_NAMES
        )
    except ProjectToolsError as exc:
        raise ImprovementError(str(exc)) from exc
    for name, decl in declared.items():
        spec = tool_spec(
            _Named(name=name, description=decl.description, args_model=args_model(name, decl))
        )
        json.dumps(spec.model_dump(mode="json"))
    return declared


async def check_tools(
    root: Path,
    patch: ImprovementPatch,
    declared: dict[str, ToolDecl],
    safety: PolicySetup,
    gate: CommandPolicy,
) -> list[str]:
    """Run each changed read-only tool without required arguments once; what was done. Only
    what the policy lets run without asking: the gate decides (and records), never asks."""
    done: list[str] = []
    quiet = CommandPolicy(Unattended(), engine=gate.engine_for(root), on_decision=gate.on_decision)
    for change in patch.project_tools:
        decl = declared.get(change.name)
        if decl is None or not decl.read_only or any(a.required for a in decl.args.values()):
            continue
        argv = argv_for(decl, {})
        command = shlex.join(argv)
        decision, _ = await quiet.decide(command, root, safety.sandbox.status().mode)
        if not decision.allowed:
            done.append(f"{change.name} not run once: the policy asks for `{command}`")
            continue
        shell = ConfinedShell(safety.sandbox, Confinement(writable=(), visible=(root,)))
        result = await shell.run(argv, cwd=root, timeout=decl.timeout)
        if result.timed_out or result.exit_code != 0:
            why = "timed out" if result.timed_out else f"exit code {result.exit_code}"
            tail = result.output.strip()[-300:]
            raise ImprovementError(f"project tool {change.name} failed its run ({why}): {tail}")
        done.append(f"project tool {change.name} ran once (`{command}`: exit 0)")
    return done
