"""Scripted model conversations shared by tests: what a good model does on the sample project."""

from __future__ import annotations

import re

from tests.conftest import BUG, FIX
from tests.fakes.openai_server import Reply, ToolCall

SUMMARY = "Fixed average(): it divided by len(values) + 1."
COMPLETED = f"agent-lsp: completed: {SUMMARY} (changed: calc.py)"  # the fix, in the editor
# What ends every outcome message in the editor: the task's totals (agent_lsp.loop.summary).
TOTALS = r" — \d[^,]*, \d+ model calls?, \d+ tool runs?, tokens: [^,]+ in, [^,]+ out.*"


# What comes between an outcome and its totals when a fix's diagnostic was asked again; the
# verdict (`gone`, `still there`, `could not be re-checked`) is the test's to give.
RECHECKS = ("gone", "still there", "could not be re-checked")


def recheck_text(verdict: str) -> str:
    """The regex of the re-check text with `verdict`."""
    assert verdict in RECHECKS, verdict
    return rf" — diagnostic '.*' at \S+:\d+ {re.escape(verdict)} \(.*\)"


def outcome(prefix: str, recheck: str | None = None) -> str:
    """The regex of an outcome message: `prefix` exactly, then — only when `recheck` names a
    verdict — the re-check of a fix's diagnostic with that verdict, then the totals. Without
    `recheck` a re-check text (one the prefix does not give) does not match."""
    middle = "" if recheck is None else recheck_text(recheck)
    return re.escape(prefix) + middle + TOTALS


def fix_average_script() -> list[Reply]:
    """read -> edit -> run tests -> finish."""
    return [
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": BUG, "new_text": FIX})
            ]
        ),
        Reply(tool_calls=[ToolCall("run_tests", {})]),
        Reply(SUMMARY),
    ]


def tool_messages(request: dict[str, object]) -> list[str]:
    messages = request["messages"]
    assert isinstance(messages, list)
    return [str(m["content"]) for m in messages if isinstance(m, dict) and m["role"] == "tool"]
