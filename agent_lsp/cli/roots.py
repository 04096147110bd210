"""Which project a command run without `--root` works on: the nearest folder upwards holding a
root marker (as the editor plugins find it), else the current folder."""

from __future__ import annotations

from pathlib import Path

# Nearest first wins, as in editor-configs/neovim (root_markers); checked in this order.
ROOT_MARKERS = (".agent-lsp", "pyproject.toml", "setup.py", "package.json", "go.mod", ".git")


def find_root(start: Path) -> Path:
    """The nearest folder from `start` upwards holding a root marker; `start` if none does."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return start
