"""`list_files` and `search_text`: bounded, deduplicated views of the project. Both leave out,
silently, what the agent could not read without asking: links leading out, secret files, and
files under deny (or ask) path rules — folders so covered are not even walked."""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from adapters.shadow import ShadowWorkspace
from agent_lsp.errors import WorkspaceError
from agent_lsp.fileio import decode_text, is_binary
from agent_lsp.messages import ToolResult
from agent_lsp.project.workspace import Workspace

SKIP_DIRS = ShadowWorkspace.SKIP_DIRS | {"dist", "build", ".idea", ".vscode"}
MAX_FILE_BYTES = 1_000_000


def walk_files(top: Path, hidden: Callable[[Path], bool] = lambda _: False) -> Iterator[Path]:
    """Files under `top`, sorted, skipping tool and dependency folders and what `hidden` says
    (a hidden folder is not walked)."""
    for dirpath, dirnames, filenames in os.walk(top):
        folder = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not hidden(folder / d))
        for name in sorted(filenames):
            if not hidden(folder / name):
                yield folder / name


class ListFilesArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(".", description="Folder relative to the workspace root.")
    glob: str | None = Field(
        None, description="Only paths matching this glob, e.g. '*.py' or 'tests/**/test_*.py'."
    )


class ListFilesTool:
    name = "list_files"
    description = "List project files under a folder (dependency and tool folders skipped)."
    args_model = ListFilesArgs
    read_only = True
    limit = 300

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def run(self, args: ListFilesArgs) -> ToolResult:
        top = self.workspace.describe(args.path, self.name).path  # deny rules: an error
        if not top.is_dir():
            raise WorkspaceError(f"{args.path}: not a folder")
        paths = await asyncio.to_thread(self._list, top, args.glob)
        shown = paths[: self.limit]
        more = f"\n[{len(paths) - self.limit} more not shown]" if len(paths) > self.limit else ""
        return ToolResult.ok("\n".join(shown) + more if shown else "(no files)", count=len(paths))

    def _list(self, top: Path, glob: str | None) -> list[str]:
        out: list[str] = []
        for path in walk_files(top, lambda p: self.workspace.hidden(p, self.name)):
            rel = self.workspace.relative(path)
            if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(path.name, glob)):
                continue
            out.append(rel)
        return out


class SearchTextArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(min_length=1, description="Text to look for (a regex if regex=true).")
    path: str = Field(".", description="File or folder to search, relative to the root.")
    regex: bool = Field(False, description="Treat pattern as a Python regular expression.")


class SearchTextTool:
    name = "search_text"
    description = (
        "Search the project's text (open editor buffers included) for a string or regex; "
        "returns path:line: text, identical lines listed once."
    )
    args_model = SearchTextArgs
    read_only = True
    limit = 100

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def run(self, args: SearchTextArgs) -> ToolResult:
        try:
            matcher = re.compile(args.pattern if args.regex else re.escape(args.pattern))
        except re.error as exc:
            return ToolResult.fail(f"invalid regex: {exc}")
        top = self.workspace.describe(args.path, self.name).path  # deny rules: an error
        buffers = dict(self.workspace.channel.buffers())
        if top.is_file() and top not in buffers:
            size = await asyncio.to_thread(_binary_size, top)
            if size is not None:
                return ToolResult.ok(
                    f"{args.path}: binary file, {size} bytes; not searched", matches=0, binary=True
                )
        binary: list[str] = []
        hits, total, matches = await asyncio.to_thread(self._search, top, matcher, buffers, binary)
        skipped = "".join(f"\n{name}" for name in binary[:10])
        if not hits:
            return ToolResult.ok(f"no matches for {args.pattern!r}{skipped}", matches=0)
        more = f"\n[{total - len(hits)} more matches not shown]" if total > len(hits) else ""
        return ToolResult.ok("\n".join(hits) + more + skipped, matches=matches)

    def _hidden(self, path: Path) -> bool:
        return self.workspace.hidden(path, self.name)

    def _search(
        self, top: Path, matcher: re.Pattern[str], buffers: dict[Path, str], binary: list[str]
    ) -> tuple[list[str], int, int]:
        first_seen: dict[str, tuple[str, int]] = {}  # identical lines are listed once
        repeats: dict[str, int] = {}
        total = 0
        files = [top] if top.is_file() else walk_files(top, self._hidden)
        for path in files:
            if self._hidden(path):  # links out, secrets, path rules: silently skipped
                continue
            text = buffers.get(path.resolve()) if buffers else None
            if text is None:
                text = _read_text_file(path)
            if text is None:
                if (size := _binary_match(path, matcher)) is not None:
                    binary.append(
                        f"{self.workspace.relative(path)}: binary file, {size} bytes, matches"
                    )
                continue
            rel = self.workspace.relative(path)
            for number, line in enumerate(text.splitlines(), 1):
                if matcher.search(line):
                    total += 1
                    key = line.strip()
                    if key in first_seen:
                        repeats[key] = repeats.get(key, 0) + 1
                    else:
                        first_seen[key] = (rel, number)
        hits = [
            f"{rel}:{number}: {key[:200]}"
            + (f" [+{repeats[key]} identical lines]" if key in repeats else "")
            for key, (rel, number) in list(first_seen.items())[: self.limit]
        ]
        return hits, len(first_seen), total


def _read_small(path: Path) -> bytes | None:
    """The bytes of a file searched (None: too large, or unreadable)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _read_text_file(path: Path) -> str | None:
    data = _read_small(path)
    if data is None or is_binary(data):
        return None
    return decode_text(data)[0]


def _binary_match(path: Path, matcher: re.Pattern[str]) -> int | None:
    """The size of a binary file the pattern occurs in (as Latin-1 text), else None."""
    data = _read_small(path)
    if data is None or not is_binary(data):
        return None
    return len(data) if matcher.search(data.decode("latin-1")) else None


def _binary_size(path: Path) -> int | None:
    """The size of a binary file (None: not binary, or unreadable)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(8000)
        return path.stat().st_size if is_binary(head) else None
    except OSError:
        return None
