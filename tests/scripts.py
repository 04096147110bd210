"""Scripted model conversations shared by tests: what a good model does on the sample project."""

from __future__ import annotations

from tests.conftest import BUG, FIX
from tests.fakes.openai_server import Reply, ToolCall

SUMMARY = "Fixed average(): it divided by len(values) + 1."


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
