"""The experiences' index is this user's, outside the project: an `index.sqlite` a repository
ships under `.agent-lsp/memory/` (rows saying an experience is about what it is not) is never
opened — it decides nothing `agent-lsp memory search` (or a task's recall) finds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_lsp.memory.index import MemoryIndex
from agent_lsp.memory.layout import Layout
from tests.test_cli import agent_lsp

EXPERIENCE = """# greet rule

- date: 2026-01-01
- tags: greeting

## Goal
greet must say hi
"""


def test_a_shipped_index_decides_nothing(project: Path, server_env: dict[str, str]) -> None:
    memory = project / ".agent-lsp" / "memory"
    memory.mkdir(parents=True)
    (memory / "2026-01-01--greet-rule.md").write_text(EXPERIENCE)
    shipped = memory / "index.sqlite"
    MemoryIndex(shipped, memory).sync([])  # a real index of the shipped file, then altered
    with sqlite3.connect(shipped) as conn:
        conn.execute("UPDATE experience SET tags = 'xyzzy'")
        conn.execute("UPDATE experience_fts SET tags = 'xyzzy'")
    conn.close()
    planted = shipped.read_bytes()

    found = agent_lsp("memory", "search", "xyzzy", "--root", str(project), env=server_env)
    mine = agent_lsp("memory", "search", "greeting", "--root", str(project), env=server_env)

    assert found.returncode == 0, found.stderr
    assert found.stdout == "(nothing relevant)\n"
    assert "greet rule (2026-01-01--greet-rule.md)" in mine.stdout  # the user's own index
    assert shipped.read_bytes() == planted  # never opened, never written
    assert Layout(project).index.is_file()
    assert not Layout(project).index.is_relative_to(project)
