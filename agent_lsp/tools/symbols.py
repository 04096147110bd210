"""`find_symbol`: where a name is defined and where it is used, from the symbol index."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.messages import ToolResult
from agent_lsp.project.workspace import Workspace
from agent_lsp.symbols.index import SymbolIndex

_NAME = re.compile(r"^(?:[^\W\d][\w$]*\.)*#?[^\W\d][\w$]*$|^\$[\w$]*$")


class FindSymbolArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(
        min_length=1,
        description="The identifier to look up: a function, class, method or type name such as "
        "`parse_args`; `Class.method` keeps only definitions inside that class.",
    )


class FindSymbolTool:
    name = "find_symbol"
    description = (
        "Find where a function, class, method or type is defined (path:line, kind, container, "
        "signature) and the lines where its name is used, across the project (Python, "
        "JavaScript, TypeScript, Go; the editor's unsaved text included). More precise than a "
        "text search: comments and strings are not matches."
    )
    args_model = FindSymbolArgs
    read_only = True
    max_definitions = 20
    max_references = 30

    def __init__(self, workspace: Workspace, index: SymbolIndex) -> None:
        self.workspace = workspace
        self.index = index

    async def run(self, args: FindSymbolArgs) -> ToolResult:
        name = args.name.strip()
        if not _NAME.match(name):
            return ToolResult.fail(
                f"{args.name!r} is not an identifier; give one name such as `parse_args` or "
                "`Parser.parse`"
            )
        buffers = dict(self.workspace.channel.buffers())
        # the first call builds the index; later ones re-parse only what changed
        return await asyncio.to_thread(self._lookup, name, buffers)

    def _lookup(self, name: str, buffers: Mapping[Path, str]) -> ToolResult:
        index = self.index
        started = time.perf_counter()
        building = not index.built
        index.refresh()
        index.sync_buffers(buffers)
        meta: dict[str, object] = {"indexed_files": len(index), "engine": index.describe()}
        if building:
            meta["build_seconds"] = round(time.perf_counter() - started, 3)
        definitions = index.definitions(name)
        occurrences = index.occurrences(name)
        references = index.references(name, self.max_references) if occurrences else []
        meta.update(definitions=len(definitions), references=len(references))
        if not definitions and not references:
            hint = index.names_like(name)
            suggestion = f" Defined names like it: {', '.join(hint)}." if hint else ""
            return ToolResult.ok(
                f"No definition of or reference to `{name}` in {len(index)} indexed files."
                + suggestion,
                found=False,
                **meta,
            )
        lines: list[str] = []
        if definitions:
            lines.append(f"definitions of `{name}` ({len(definitions)}):")
            for hit in definitions[: self.max_definitions]:
                d = hit.definition
                where = f" in {d.container}" if d.container else ""
                lines.append(f"  {hit.path}:{d.line} {d.kind}{where}: {d.signature}")
            if len(definitions) > self.max_definitions:
                lines.append(f"  [{len(definitions) - self.max_definitions} more not shown]")
        else:
            lines.append(f"no definition of `{name}` in the project (a library name?)")
        total = sum(occurrences.values())
        bare = name.rpartition(".")[2]
        if references:
            more = " (the first ones)" if len(references) >= self.max_references else ""
            unresolved = f" (every `{bare}`: receivers are not resolved)" if bare != name else ""
            lines.append(
                f"references to `{bare}`{unresolved}: {len(references)} lines shown{more}; "
                f"{total} occurrences in {len(occurrences)} files, definition lines left out:"
            )
            lines.extend(f"  {r.path}:{r.line}: {r.text}" for r in references)
        else:
            lines.append(f"no other references to `{bare}`")
        return ToolResult.ok("\n".join(lines), found=True, **meta)
