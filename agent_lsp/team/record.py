"""The commander's task record: what kind of task it is, its goal, where, how urgent, its
limits, which kind of problem (code, config, environment), and whether to diagnose only."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from agent_lsp.errors import AgentLspError
from agent_lsp.team.answers import json_answer


class TaskType(StrEnum):
    BUG_FIX = "bug_fix"
    REFACTOR = "refactor"
    FEATURE = "feature"
    TESTS = "tests"
    DIAGNOSIS = "diagnosis"


class TaskRecord(BaseModel):
    type: TaskType
    goal: str = Field(min_length=1)
    modules: list[str] = Field(default_factory=list[str])
    priority: str = "normal"
    constraints: list[str] = Field(default_factory=list[str])
    problem: Literal["code", "config", "environment"] = "code"
    diagnose_only: bool = False
    diagnosis: str = ""  # a diagnose-only task: what is wrong and where

    @field_validator("type", mode="before")
    @classmethod
    def _spelling(cls, value: Any) -> Any:
        """`bug fix`, `Bug-Fix` and `bugfix` are `bug_fix`."""
        if not isinstance(value, str):
            return value
        word = re.sub(r"[\s-]+", "_", value.strip().lower())
        return "bug_fix" if word == "bugfix" else word

    @property
    def diagnose(self) -> bool:
        """Nothing is written: the task ends with the diagnosis."""
        return self.diagnose_only or self.type is TaskType.DIAGNOSIS

    def render(self, instruction: str) -> str:
        """The record as the planner reads it."""
        lines = [
            f"type: {self.type.value}",
            f"goal: {self.goal}",
            f"problem: {self.problem}",
            f"priority: {self.priority}",
        ]
        if self.modules:
            lines.append("modules: " + ", ".join(self.modules))
        if self.constraints:
            lines.append("constraints: " + "; ".join(self.constraints))
        lines.append(f"the user's words: {instruction}")
        return "\n".join(lines)


def read_record(text: str) -> TaskRecord:
    """The commander's answer: one JSON object (fenced or bare), else a clear error."""
    value = json_answer(text, "task record")
    if not isinstance(value, dict):
        raise AgentLspError(f"the task record is not a JSON object: {text[:200]}")
    try:
        return TaskRecord.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "record"
        raise AgentLspError(f"the task record is malformed: {where}: {error['msg']}") from None
