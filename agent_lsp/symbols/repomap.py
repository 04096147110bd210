"""A repository map: files and their top-level definitions with signatures, ranked, in a budget.

Ranking: the focus files (in the order given), then files defining a mentioned identifier, then
the rest by how often their top-level names are referenced from other files. Each file lists its
top-level definitions by line, with the members of its classes indented under them. Tokens are
estimated as characters / 4; the map never exceeds the budget.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from agent_lsp.symbols.entries import IndexedFile
from agent_lsp.symbols.index import SymbolIndex
from agent_lsp.symbols.model import CLASS_LIKE, Definition

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def repo_map(
    index: SymbolIndex,
    budget_tokens: int,
    focus_files: Iterable[Path | str] = (),
    mentioned: Iterable[str] = (),
) -> str:
    """The map as text, at most `budget_tokens` (estimated); "" when nothing fits."""
    limit = budget_tokens * CHARS_PER_TOKEN
    files = {f.path: f for f in index.files()}
    focus = [k for k in dict.fromkeys(index.key(p) for p in focus_files) if k in files]
    words = set(mentioned)
    totals = index.totals()
    ranked = sorted(
        (f for f in files.values() if f.path not in focus and f.symbols.definitions),
        key=lambda f: (not _defines(f, words), -_score(f, totals), f.path),
    )
    order = [files[k] for k in focus] + ranked
    out: list[str] = []
    used = 0
    for position, entry in enumerate(order):
        block = _block(entry)
        rest = len(order) - position
        trailer = f"[{rest - 1} more files not shown]\n" if rest > 1 else ""
        if used + len(block) + len(trailer) <= limit:
            out.append(block)
            used += len(block)
            continue
        trailer = f"[{rest} more files not shown]\n"
        room = limit - used - len(trailer)
        part = _cut(block, room)
        if part:
            out.append(part)
            used += len(part)
            trailer = f"[{rest - 1} more files not shown]\n" if rest > 1 else ""
        if used + len(trailer) <= limit:
            out.append(trailer)
        break
    return "".join(out)


def _defines(entry: IndexedFile, words: set[str]) -> bool:
    return bool(words) and any(d.name in words for d in entry.symbols.definitions)


def _score(entry: IndexedFile, totals: Counter[str]) -> int:
    """References from other files to this file's top-level names."""
    own = entry.symbols.identifiers
    return sum(
        totals.get(d.name, 0) - own.get(d.name, 0)
        for d in entry.symbols.definitions
        if d.container is None
    )


def _block(entry: IndexedFile) -> str:
    """`path:` then the top-level definitions by line, each type's members indented under it."""
    definitions = entry.symbols.definitions
    names = {d.name for d in definitions}
    tops = [d for d in definitions if d.container is None]
    types = {d.name for d in tops if d.kind in CLASS_LIKE or d.kind == "type"}
    members: dict[str, list[Definition]] = {}
    for d in definitions:
        if d.container in types:
            members.setdefault(d.container, []).append(d)
    # a Go method whose receiver type is declared in another file is shown at the top level
    tops += [d for d in definitions if d.kind == "method" and d.container not in names]
    lines = [f"{entry.path}:"]
    for d in sorted(tops, key=lambda d: d.line):
        lines.append(f"  {d.line}: {d.signature or d.name}")
        if d.name in types:
            lines.extend(f"    {m.line}: {m.signature or m.name}" for m in members.pop(d.name, []))
    return "\n".join(lines) + "\n"


def _cut(block: str, room: int) -> str:
    """As many whole lines of `block` as fit in `room` characters; the path line alone is not
    worth showing."""
    lines = block.splitlines(keepends=True)
    kept: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) > room:
            break
        kept.append(line)
        size += len(line)
    return "".join(kept) if len(kept) > 1 else ""
