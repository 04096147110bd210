"""`git_status` and `git_diff` (git run confined and hardened), with the editor's unsaved
changes."""

from __future__ import annotations

import difflib

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.fileio import read_disk_text
from agent_lsp.messages import ToolResult
from agent_lsp.project.git import Git
from agent_lsp.project.status import project_status
from agent_lsp.project.workspace import Workspace


class GitStatusArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GitStatusTool:
    name = "git_status"
    description = "Git branch, modified/staged/untracked files, last commits, unsaved buffers."
    args_model = GitStatusArgs
    read_only = True

    def __init__(self, workspace: Workspace, git: Git | None = None) -> None:
        self.workspace = workspace
        self.git = git or Git(workspace.root)

    async def run(self, args: GitStatusArgs) -> ToolResult:
        status = await project_status(self.git, 100)
        unsaved = sorted(unsaved_buffers(self.workspace))
        if unsaved:
            status += "\n  unsaved in the editor: " + ", ".join(unsaved)
        return ToolResult.ok(status)


class GitDiffArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = Field(None, description="Limit the diff to this file or folder.")


class GitDiffTool:
    name = "git_diff"
    description = (
        "The diff of the working tree against HEAD, followed by the editor's unsaved changes "
        "against the files on disk."
    )
    args_model = GitDiffArgs
    read_only = True

    def __init__(self, workspace: Workspace, git: Git | None = None) -> None:
        self.workspace = workspace
        self.git = git or Git(workspace.root)

    async def run(self, args: GitDiffArgs) -> ToolResult:
        target = self.workspace.resolve(args.path) if args.path else None
        committed = await self._git_diff(target)
        parts = [committed] if committed else []
        for rel, (disk, buffer) in sorted(unsaved_buffers(self.workspace).items()):
            if target is not None and not self.workspace.resolve(rel).is_relative_to(target):
                continue
            parts.append(
                "".join(
                    difflib.unified_diff(
                        disk.splitlines(keepends=True),
                        buffer.splitlines(keepends=True),
                        f"a/{rel} (disk)",
                        f"b/{rel} (editor, unsaved)",
                    )
                )
            )
        return ToolResult.ok("\n".join(parts) if parts else "no changes")

    async def _git_diff(self, target: object) -> str:
        extra = ["--", str(target)] if target is not None else []
        head = await self.git.run("rev-parse", "--verify", "-q", "HEAD")
        if head.exit_code != 0:
            if head.exit_code == 126:
                return f"(git diff unavailable: {head.output.strip()})"
            return ""  # no commit yet, or not a repository
        names = await self.git.run("diff", "--name-only", "-z", "HEAD", *extra)
        if names.exit_code != 0:
            return f"(git diff unavailable: {names.output.strip()[:200]})"
        files = [n for n in names.output.split("\0") if n]
        shown = [n for n in files if not self.git.hide(n)]
        note = ""
        if len(shown) < len(files):
            note = f"({len(files) - len(shown)} changed files not shown: secret or denied)"
        if not shown:
            return note
        result = await self.git.run(
            "diff", "--no-ext-diff", "--no-textconv", "--no-color", "HEAD", "--", *shown
        )
        if result.exit_code != 0:
            return f"(git diff unavailable: {result.output.strip()[:200]})"
        return "\n".join(p for p in (result.output.rstrip("\n"), note) if p)


def unsaved_buffers(workspace: Workspace) -> dict[str, tuple[str, str]]:
    """Open buffers whose text differs from the file on disk: rel -> (disk, buffer)."""
    out: dict[str, tuple[str, str]] = {}
    for rel, text in workspace.overlays().items():
        path = workspace.root / rel
        disk = read_disk_text(path) if path.is_file() else ""
        if disk != text:
            out[rel] = (disk, text)
    return out
