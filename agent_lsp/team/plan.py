"""The planner's answer: one fenced ```json block (or a bare JSON list) in its final words,
read into steps (`json_list` for the other roles' lists). Anything else is a clear error."""

from __future__ import annotations

from typing import Any, cast

from pydantic import ValidationError

from agent_lsp.errors import AgentLspError
from agent_lsp.team.answers import json_answer
from agent_lsp.team.state import Step


def json_list(text: str, what: str) -> list[Any]:
    value = json_answer(text, what)
    if not isinstance(value, list):
        raise AgentLspError(f"the {what} is not a JSON list: {text[:200]}")
    return cast("list[Any]", value)


def read_plan(text: str, taken: set[str]) -> tuple[list[Step], list[str], str]:
    """The planner's answer: a list of steps, or an object going back first,
    `{"undo": ["s1"], "why": "...", "steps": [...]}` (the steps, the finished steps to undo,
    why)."""
    value = json_answer(text, "plan")
    if not isinstance(value, dict):
        return read_steps(text, taken), [], ""
    plan = cast("dict[str, Any]", value)
    undo, steps = plan.get("undo", []), plan.get("steps")
    if not isinstance(undo, list) or not isinstance(steps, list):
        raise AgentLspError(f"the plan is not a list of steps nor {{undo, steps}}: {text[:200]}")
    ids = [str(i) for i in cast("list[Any]", undo)]
    return _steps(cast("list[Any]", steps), taken), ids, str(plan.get("why", ""))


def read_steps(text: str, taken: set[str]) -> list[Step]:
    """The planner's steps; ids already used in the plan get a suffix, unknown dependencies
    are dropped (a step cannot wait for one that does not exist)."""
    return _steps(json_list(text, "plan"), taken)


def _steps(items: list[Any], taken: set[str]) -> list[Step]:
    try:
        steps = [Step.model_validate(item) for item in items]
    except ValidationError as exc:
        raise AgentLspError(f"a step of the plan is malformed: {exc.errors()[0]['msg']}") from None
    if not steps:
        raise AgentLspError("the plan has no steps")
    renamed: dict[str, str] = {}
    for step in steps:
        new = step.id
        n = 2
        while new in taken:
            new, n = f"{step.id}-{n}", n + 1
        renamed[step.id] = new
        taken.add(new)
        step.id = new
    known = set(taken)
    for step in steps:
        step.depends_on = [renamed.get(d, d) for d in step.depends_on if renamed.get(d, d) in known]
    return steps
