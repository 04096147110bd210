"""`read_file` and `edit_file`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.fileio import (
    EncodingError,
    decode_text,
    detect_encoding,
    encode_text,
    file_encoding,
    is_binary,
    not_text,
)
from agent_lsp.messages import ToolResult
from agent_lsp.project.editing import EditFailure, EditMatch, MatchKind, find_edit
from agent_lsp.project.names import Known, flag_message, undefined_names
from agent_lsp.project.syntax import syntax_error
from agent_lsp.project.workspace import Workspace

STALE = "stale"  # the reason of an edit refused because the file changed since it was read
MAX_DELETED_SHARE = 0.5  # an edit deleting more of a file's lines is refused once
MIN_LINES_GUARDED = 20  # ... in a file of this many lines or more


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
        path = await self.workspace.resolve_readable(args.path)  # secret files: the user asked
        await self.workspace.fetch(path)  # an ACP client's unsaved text
        warning = ""
        if path not in self.workspace.channel.buffers() and path.is_file():
            with path.open("rb") as fh:  # a binary file is named, never read whole
                head = fh.read(8000)
            if is_binary(head):
                size = path.stat().st_size
                return ToolResult.ok(
                    f"{args.path}: binary file, {size} bytes; not shown",
                    path=args.path,
                    binary=True,
                )
            data = path.read_bytes()
            text = decode_text(data)[0]
            if detect_encoding(data) is None:
                warning = f"[{args.path} is {not_text(data)}: shown with U+FFFD; not editable]\n"
        else:
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
        return ToolResult.ok(warning + shown + note, path=args.path, total_lines=len(lines))


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
        "editor buffer (undoable) when the file is open. If old_text differs from the file only "
        "in line endings, trailing whitespace, indentation or one slightly stale line, the edit "
        "still applies at the one matching place and the result says what was adjusted."
    )
    args_model = EditFileArgs
    read_only = False
    max_shown = 30  # lines of the edited region shown after a re-indented or close match

    def __init__(self, workspace: Workspace, known: Known | None = None) -> None:
        self.workspace = workspace
        self.known = known  # the project's names (the symbol index): flags hallucinated calls
        self._flagged: set[tuple[str, str, str]] = set()
        self._deleting: set[tuple[str, str, str]] = set()  # large deletions said once

    def _unknown_names(self, rel: str, before: str, after: str, args: EditFileArgs) -> str | None:
        """The refusal of a first edit calling a name defined nowhere; the same call again
        is the model's confirmation."""
        if self.known is None:
            return None
        names = undefined_names(rel, before, after, args.new_text, self.known, self.workspace.root)
        key = (rel, args.old_text, args.new_text)
        if not names or key in self._flagged:
            return None
        self._flagged.add(key)
        return flag_message(rel, names)

    def _large_deletion(self, rel: str, before: str, after: str, args: EditFileArgs) -> str | None:
        """The refusal of a first edit that deletes more than `MAX_DELETED_SHARE` of a file's
        lines (a file of `MIN_LINES_GUARDED` lines or more): a model rewriting a whole file
        often drops what it did not mean to. The same call again is the model's word that the
        task asks for it."""
        old, new = len(before.splitlines()), len(after.splitlines())
        gone = old - new
        if old < MIN_LINES_GUARDED or gone <= old * MAX_DELETED_SHARE:
            return None
        key = (rel, args.old_text, args.new_text)
        if key in self._deleting:
            return None
        self._deleting.add(key)
        return (
            f"edit refused: it would delete {gone} of the {old} lines of {rel} "
            f"({round(100 * gone / old)}%). Change only the lines that must change (old_text: "
            "just those lines). If the task asks for this deletion, send the same edit again."
        )

    async def run(self, args: EditFileArgs) -> ToolResult:
        ws = self.workspace
        path = ws.describe(args.path, self.name).path  # deny path rules for edit_file: an error
        await ws.fetch(path)  # an ACP client's unsaved text: the edit applies to it
        text = ws.read_text(path)
        on_disk = path not in ws.channel.buffers()
        try:  # a binary or undecodable file is refused before anything else
            enc = file_encoding(path, args.path) if on_disk else None
        except EncodingError as exc:
            return ToolResult.fail(str(exc), reason="encoding")
        if ws.changed_since_read(path, text):  # refused until it is read again: never blind
            return ToolResult.fail(
                f"{args.path} changed since you last read it (the user may be typing); "
                "read it again and redo the edit against the current text",
                reason=STALE,
            )
        if args.old_text == args.new_text:
            return ToolResult.ok("no change: old_text and new_text are identical", changed=False)
        found = find_edit(text, args.old_text, args.new_text, name=args.path)
        if isinstance(found, EditFailure):
            return ToolResult.fail(found.message, reason=found.kind.value)
        if found.already_applied:
            return ToolResult.ok(
                f"no change: the edit is already applied ({found.note})", changed=False
            )
        if enc is not None:
            try:  # the file keeps its encoding, or nothing is written
                encode_text(found.text, enc, args.path)
            except EncodingError as exc:
                return ToolResult.fail(str(exc), reason="encoding")
        broken = await syntax_error(path, found.text)
        if broken and not await syntax_error(path, text):
            why = f" ({found.note})" if found.note else ""
            return ToolResult.fail(f"edit rejected, it would break the syntax: {broken}{why}")
        if refusal := self._unknown_names(args.path, text, found.text, args):
            return ToolResult.fail(refusal, reason="undefined name")
        if refusal := self._large_deletion(args.path, text, found.text, args):
            return ToolResult.fail(refusal, reason="large deletion")
        await ws.write_text(path, found.text, f"agent-lsp: edit {args.path}")
        return ToolResult.ok(
            self._report(args.path, found),
            changed=True,
            path=args.path,
            line=found.start_line,
            match=found.kind.value,
        )

    def _report(self, rel: str, found: EditMatch) -> str:
        """What was edited; after a re-indented or close match, also the lines as they now read."""
        done = f"edited {rel} at line {found.start_line}"
        if not found.note:
            return done
        if found.kind not in (MatchKind.INDENTATION, MatchKind.CLOSE):
            return f"{done} ({found.note})"
        lines = found.text.splitlines()
        first, last = found.start_line, min(found.new_end_line, len(lines))
        last = min(last, first + self.max_shown - 1)
        shown = "\n".join(f"{n}| {lines[n - 1]}" for n in range(first, last + 1))
        return f"{done} ({found.note})" + (
            f"; the edited lines now read:\n{shown}" if shown else ""
        )
