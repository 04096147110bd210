"""Project rules files (AGENTS.md, CLAUDE.md, .cursorrules, .github/copilot-instructions.md),
nearest folder first, under a size cap. Each goes through the `ReadGuard`: a rules file that
links out of the workspace, is a secret (by its name or its target's) or is hidden by a path
rule is skipped with a WARN, its content never loaded."""

from __future__ import annotations

import os
from pathlib import Path

from agent_lsp.memory.state import read_text_file
from agent_lsp.safety.reads import ReadGuard

RULE_FILES = ("AGENTS.md", "CLAUDE.md", ".cursorrules", ".github/copilot-instructions.md")
RULES_CHARS = 8_000


def rule_files(root: Path, focus: str | None = None) -> list[Path]:
    """Rules files (or links named so) from the focus file's folder up to the root, nearest
    first. The folders are the lexical ones: a linked folder on the way is not left."""
    root = root.resolve()
    start = Path(os.path.normpath(root / focus)).parent if focus else root
    if not start.is_relative_to(root):
        start = root
    folders = [start, *(p for p in start.parents if p.is_relative_to(root))]
    found: list[Path] = []
    for folder in folders:
        for name in RULE_FILES:
            path = folder / name
            if path.is_file() or path.is_symlink():
                found.append(path)
    return found


def load_rules(
    root: Path,
    focus: str | None,
    warnings: list[str],
    cap: int = RULES_CHARS,
    reads: ReadGuard | None = None,
) -> list[tuple[str, str]]:
    """(relative path, text) of each rules file; the nearest get the budget first. `reads`
    (default: a guard without path rules) decides which may be loaded."""
    guard = reads or ReadGuard(root)
    out: list[tuple[str, str]] = []
    budget = cap
    for path in rule_files(root, focus):
        rel = path.relative_to(root.resolve()).as_posix()
        if budget <= 0:
            out.append((rel, f"[not loaded: over the {cap}-character rules budget; read_file it]"))
            continue
        text = read_text_file(guard, path, rel, warnings)
        if text is None or not text.strip():
            continue
        text = text.strip()
        if len(text) > budget:
            text = text[:budget].rstrip() + f"\n[... truncated; read_file {rel} for the rest]"
        budget -= len(text)
        out.append((rel, text))
    return out
