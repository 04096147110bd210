"""`propose_improvement`: the tool of an improve task. It checks the patch with the guard (a
refused one goes back to the model with the reasons, so that it can change it) and keeps it
for the front end, which shows it to the user and applies it; the tool itself writes nothing."""

from __future__ import annotations

from agent_lsp.config.schema import Settings
from agent_lsp.improve.patch import ImprovementPatch, refusals
from agent_lsp.messages import ToolResult

__all__ = ["ProposeImprovementTool"]


class ProposeImprovementTool:
    name = "propose_improvement"
    description = (
        "Propose a change to agent-lsp's own setup for this project: settings of "
        ".agent-lsp/config.toml, a note for the system prompt, notes for single tools, "
        "project tools (a named command with typed arguments, .agent-lsp/tools.toml). The "
        "user reviews it before anything is written. Never the model, endpoint, permission "
        "level, sandbox or policy. Call it once, then answer with a one-line summary."
    )
    args_model = ImprovementPatch
    read_only = True  # it only keeps the proposal

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.proposed: ImprovementPatch | None = None

    async def run(self, args: ImprovementPatch) -> ToolResult:
        refused = refusals(args, self.settings)
        if refused:
            return ToolResult.fail("not proposed: " + "; ".join(refused))
        self.proposed = args
        return ToolResult.ok("proposed; the user reviews it after you answer")
