"""`read_file` and `edit_file`."""

from __future__ import annotations

import difflib

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.messages import ToolResult
from agent_lsp.syntax import syntax_error
from agent_lsp.workspace import Workspace


class ReadFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="File path relative to the workspace root.")
    start_line: int | None = Field(None, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to show (1-based, inclusive).")


class ReadFileTool:
    name = "read_file"
    description = (
        "Read a file (the editor's unsaved text if it is open), with line numbers. "
        "Line numbers are for reference only: never include them in edits."
    )
    args_model = ReadFileArgs
    read_only = True
    max_lines = 400

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def run(self, args: ReadFileArgs) -> ToolResult:
        path = self.workspace.resolve(args.path)
        text = self.workspace.read_text(path)
        self.workspace.note_read(path, text)
        lines = text.splitlines()
        start = args.start_line or 1
        end = min(args.end_line or len(lines), len(lines), start + self.max_lines - 1)
        if lines and start > len(lines):
            return ToolResult.fail(f"{args.path} has only {len(lines)} lines")
        width = len(str(max(end, 1)))
        shown = "\n".join(f"{n:>{width}}| {lines[n - 1]}" for n in range(start, end + 1))
        note = "" if end >= len(lines) else f"\n[lines {end + 1}-{len(lines)} not shown]"
        return ToolResult.ok(shown + note, path=args.path, total_lines=len(lines))


class EditFileArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="File path relative to the workspace root.")
    old_text: str = Field(
        description="Exact text to replace, copied from the file (no line numbers); it must "
        "occur exactly once, so include a few lines of context."
    )
    new_text: str = Field(description="The replacement text.")


class EditFileTool:
    name = "edit_file"
    description = (
        "Replace one occurrence of old_text with new_text in a file. The edit lands in the "
        "editor buffer (undoable) when the file is open."
    )
    args_model = EditFileArgs
    read_only = False

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def run(self, args: EditFileArgs) -> ToolResult:
        ws = self.workspace
        path = ws.resolve(args.path)
        text = ws.read_text(path)
        if ws.changed_since_read(path, text):
            ws.note_read(path, text)
            return ToolResult.fail(
                f"{args.path} changed since you last read it (the user may be typing); "
                "read it again and redo the edit against the current text"
            )
        if args.old_text == args.new_text:
            return ToolResult.ok("no change: old_text and new_text are identical", changed=False)
        count = text.count(args.old_text) if args.old_text else 0
        if count == 0:
            if args.new_text and args.new_text in text:
                return ToolResult.ok("no change: the edit is already applied", changed=False)
            return ToolResult.fail(
                f"old_text not found in {args.path}. {_closest(text, args.old_text)}"
            )
        if count > 1:
            return ToolResult.fail(
                f"old_text occurs {count} times in {args.path} (lines "
                f"{', '.join(map(str, _occurrence_lines(text, args.old_text)))}); "
                "include more surrounding lines so it is unique"
            )
        new_text = text.replace(args.old_text, args.new_text, 1)
        broken = syntax_error(path, new_text)
        if broken and not syntax_error(path, text):
            return ToolResult.fail(f"edit rejected, it would break the syntax: {broken}")
        await ws.write_text(path, new_text, f"agent-lsp: edit {args.path}")
        line = text[: text.index(args.old_text)].count("\n") + 1
        return ToolResult.ok(
            f"edited {args.path} at line {line}", changed=True, path=args.path, line=line
        )


def _occurrence_lines(text: str, needle: str) -> list[int]:
    lines: list[int] = []
    start = text.find(needle)
    while start != -1 and len(lines) < 10:
        lines.append(text[:start].count("\n") + 1)
        start = text.find(needle, start + 1)
    return lines


def _closest(text: str, needle: str) -> str:
    """Point at the most similar region of the file, with line numbers."""
    lines = text.splitlines()
    want = needle.strip("\n").splitlines() or [""]
    size = len(want)
    best_ratio, best_at = 0.0, -1
    for i in range(max(1, len(lines) - size + 1)):
        window = "\n".join(lines[i : i + size])
        ratio = difflib.SequenceMatcher(None, window, "\n".join(want)).ratio()
        if ratio > best_ratio:
            best_ratio, best_at = ratio, i
    if best_at < 0 or best_ratio < 0.5:
        return "Read the file again and copy the text exactly."
    region = "\n".join(
        f"{n + 1}| {lines[n]}" for n in range(best_at, min(best_at + size, len(lines)))
    )
    return f"The closest text ({best_ratio:.0%} similar) is:\n{region}"
