"""A two-module project for team mode, and the scripted replies of each role."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.fakes.openai_server import Reply, ToolCall

AREA_STUB = "def square_area(side):\n    raise NotImplementedError\n"
PERIMETER_STUB = "def square_perimeter(side):\n    raise NotImplementedError\n"
AREA = "def square_area(side):\n    return side * side\n"
PERIMETER = "def square_perimeter(side):\n    return 4 * side\n"
TASK = "Implement square_area and square_perimeter."

COMMANDER = "[team role: commander]"
PLANNER = "[team role: planner]"
REVIEWER = "[team role: reviewer]"


def step_marker(step_id: str) -> str:
    """What only the editor (executor, tester) of `step_id` has in its first message."""
    return f"## Your step\n{step_id}:"


def locate_marker(step_id: str) -> str:
    """What only the retriever of `step_id` has in its first message."""
    return f"## The step to find the code for\n{step_id}:"


def locate_reply(*locations: tuple[str, int, int, str]) -> Reply:
    """The retriever's answer: (path, start_line, end_line, summary) each."""
    found = [{"path": p, "start_line": a, "end_line": b, "summary": s} for p, a, b, s in locations]
    return Reply("```json\n" + json.dumps(found) + "\n```", usage=(40, 5))


@pytest.fixture
def shapes(tmp_path: Path) -> Path:
    root = tmp_path / "shapes"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "shapes"\nversion = "0.0.0"\n\n'
        '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n'
    )
    (root / "area.py").write_text(AREA_STUB)
    (root / "perimeter.py").write_text(PERIMETER_STUB)
    (root / "tests" / "test_area.py").write_text(
        "from area import square_area\n\n\ndef test_area():\n    assert square_area(3) == 9\n"
    )
    (root / "tests" / "test_perimeter.py").write_text(
        "from perimeter import square_perimeter\n\n\n"
        "def test_perimeter():\n    assert square_perimeter(3) == 12\n"
    )
    return root


def record_reply(**fields: object) -> Reply:
    """The commander's task record (a feature in the code by default)."""
    record: dict[str, object] = {
        "type": "feature",
        "goal": "implement the two stubs",
        "modules": ["area.py", "perimeter.py"],
        "problem": "code",
    }
    record.update(fields)
    return Reply("The record:\n```json\n" + json.dumps(record) + "\n```", usage=(30, 5))


def plan_reply(*steps: Mapping[str, object]) -> Reply:
    return Reply(
        "The plan:\n```json\n" + json.dumps([dict(s) for s in steps]) + "\n```", usage=(100, 20)
    )


TWO_STEPS = (
    {"id": "s1", "goal": "implement square_area", "files": ["area.py"], "done": "test_area"},
    {
        "id": "s2",
        "goal": "implement square_perimeter",
        "files": ["perimeter.py"],
        "done": "test_perimeter",
    },
)


STUB_BODY = "    raise NotImplementedError\n"


def edit_step(path: str, body: str, summary: str) -> list[Reply]:
    """An editor: read the file, replace the stub's body, finish."""
    edit = {"path": path, "old_text": STUB_BODY, "new_text": body}
    return [
        Reply(tool_calls=[ToolCall("read_file", {"path": path})], usage=(50, 10)),
        Reply(tool_calls=[ToolCall("edit_file", edit)], usage=(60, 10)),
        Reply(summary, usage=(70, 10)),
    ]


AREA_BODY = "    return side * side\n"
PERIMETER_BODY = "    return 4 * side\n"


def review(findings: Sequence[Mapping[str, object]]) -> Reply:
    return Reply("```json\n" + json.dumps([dict(f) for f in findings]) + "\n```", usage=(80, 10))
