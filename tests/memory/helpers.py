"""Scripts and readers shared by the memory tests."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from agent_lsp.memory.layout import Layout
from tests.fakes.openai_server import Reply, ToolCall
from tests.scripts import fix_average_script

DISTILLED = {
    "topic": "average divides by n plus one",
    "tags": ["calc", "mean"],
    "symbols": ["average"],
    "goal": "Make average() return the arithmetic mean.",
    "steps": ["ran the suite: test_average failed", "divided by len(values)", "suite passes"],
    "key_decisions": ["divide by len(values) - the definition of the mean"],
    "pitfalls": ["len(values) + 1 in the denominator: add() still passed, average() did not"],
    "open_questions": ["average([]) raises ZeroDivisionError"],
}


def fail_fix_script() -> list[Reply]:
    """See the suite fail, then read, edit, pass, answer."""
    return [Reply(tool_calls=[ToolCall("run_tests", {})]), *fix_average_script()]


def distilled_reply() -> Reply:
    return Reply("```json\n" + json.dumps(DISTILLED) + "\n```")


def experience_files(project: Path) -> list[Path]:
    return sorted((project / ".agent-lsp" / "memory").glob("*--*.md"))


def index_rows(project: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(Layout(project).index)
    try:
        return conn.execute("SELECT path, files, symbols FROM experience").fetchall()
    finally:
        conn.close()


def log_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def system_of(request: dict[str, Any]) -> str:
    return str(request["messages"][0]["content"])
