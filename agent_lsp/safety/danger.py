"""Which recursive deletions (and chmod/chown -R, mv) are forbidden: `/`, the home folder, the
workspace or a parent of it, a `.git` folder, or everything in one of them."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["danger"]


def danger(b: Builder, idx: int, word: Word, what: str, root_ok: bool = False) -> bool:
    """Whether `word` (argument `idx`) names such a folder; adds the FORBIDDEN finding.
    `root_ok`: the workspace root itself is not forbidden (find with a filter)."""
    guard = b.guard
    token = b.token(idx)
    texts = b.expand(word, token) if word.glob else [word.value]
    top = {Path("/"), guard.home} | (set() if root_ok else {guard.root})
    for text in texts:
        if text.startswith("//") and not guard.windows:  # `//`, `//x`: `/`, `/x` on POSIX
            text = "/" + text.lstrip("/")
        res = b.resolve(text)
        if res is None:
            continue
        p = res.path
        parent = p != guard.root and guard.root.is_relative_to(p)
        if p in top or parent or guard.home.is_relative_to(p):
            b.add(Risk.FORBIDDEN, f"{what} {word.raw} ({p})", token)
            return True
        if p.name == ".git" and what.startswith(("rm", "mv")):
            b.add(Risk.FORBIDDEN, f"{what} {word.raw} (a git repository)", token)
            return True
    if word.glob:
        folder = b.resolve(word.pattern.rpartition("/")[0] or ".")
        if folder is not None and (folder.path in top or folder.path == guard.root):
            b.add(Risk.FORBIDDEN, f"{what} everything in {folder.path}", token)
            return True
    return False
