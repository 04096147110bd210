"""`write_file`: create a new file (existing files are changed with edit_file)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.messages import ToolResult
from agent_lsp.project.workspace import Workspace


class WriteFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="New file path relative to the workspace root.")
    content: str = Field(description="The whole content of the new file.")


class WriteFileTool:
    name = "write_file"
    description = "Create a new file with the given content. Fails if the file exists."
    args_model = WriteFileArgs
    read_only = False

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def run(self, args: WriteFileArgs) -> ToolResult:
        path = self.workspace.describe(args.path, self.name).path  # deny path rules: an error
        if path.exists() or path in self.workspace.channel.buffers():
            return ToolResult.fail(
                f"{args.path} already exists; use edit_file to change it", exists=True
            )
        content = (
            args.content
            if args.content.endswith("\n") or not args.content
            else (args.content + "\n")
        )
        await self.workspace.write_text(path, content, f"agent-lsp: create {args.path}")
        lines = content.count("\n")
        return ToolResult.ok(f"created {args.path} ({lines} lines)", path=args.path, lines=lines)
