"""`get_diagnostics`: the problems the editor and the test runs reported, per file."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.messages import ToolResult
from agent_lsp.project.diagnostics import DiagnosticStore
from agent_lsp.project.workspace import Workspace


class GetDiagnosticsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = Field(None, description="Only this file (default: every file).")


class GetDiagnosticsTool:
    name = "get_diagnostics"
    description = (
        "Diagnostics known for the project: those the editor showed (linters, type checkers) "
        "and test failures from the last full run, as path:line: [source] message."
    )
    args_model = GetDiagnosticsArgs
    read_only = True

    def __init__(self, workspace: Workspace, store: DiagnosticStore) -> None:
        self.workspace = workspace
        self.store = store

    async def run(self, args: GetDiagnosticsArgs) -> ToolResult:
        path = self.workspace.resolve(args.path) if args.path else None
        rows: list[str] = []
        for file, diagnostics in sorted(self.store.get(path).items()):
            rel = self.workspace.relative(file)
            for d in sorted(diagnostics, key=lambda d: d.line):
                source = f"[{d.source}] " if d.source else ""
                rows.append(f"{rel}:{d.line + 1}: {source}{d.message.splitlines()[0][:200]}")
        if not rows:
            return ToolResult.ok("no diagnostics known", count=0)
        return ToolResult.ok("\n".join(rows[:200]), count=len(rows))
