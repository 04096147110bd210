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

PLANNER = "[team role: planner]"
REVIEWER = "[team role: reviewer]"


def step_marker(step_id: str) -> str:
    """What only the worker of `step_id` has in its first message."""
    return f"## Your step\n{step_id}:"


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
    """A worker: read the file, replace the stub's body, finish."""
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
