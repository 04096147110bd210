"""How a step ended, decided by its role: an edit by the editor's outcome, a run by the exit
code of the executor's last command (whatever the model says), a test by the tester's last
test run (failing: its root-cause text goes back to the planner)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from pydantic import ValidationError

from adapters.affected import is_test_file
from agent_lsp.messages import ChatMessage, TaskOutcome, TaskStatus, ToolResult, ToolStatus
from agent_lsp.team.state import Step, StepStatus

TEST_FOLDERS = ("tests", "test", "__tests__", "spec")
# In a test folder, yet how the runners are configured or what they load first: the tester's
# `tests/pytest.ini` or `tests/conftest.py` could change what the full suite runs or reports.
RUNNER_FILES = re.compile(
    r"conftest\.py|pytest\.ini|tox\.ini|setup\.(cfg|py)|pyproject\.toml|[^/]*\.pth"
    r"|(site|user)customize\.py|package\.json|go\.(mod|work)|tsconfig[^/]*\.json"
    r"|\.?(jest|vitest|vite|babel|mocha|karma)(\.config|\.setup|rc)(\.[^/]*)?",
    re.IGNORECASE,
)


@dataclass
class Verdict:
    status: StepStatus
    summary: str
    tests_failed: bool = False  # back to the planner with `summary` as the root cause


def tool_results(messages: Sequence[ChatMessage]) -> list[tuple[str, ToolResult]]:
    """Every tool result of a run, with its tool's name, in order."""
    names = {call.id: call.name for m in messages for call in m.tool_calls}
    found: list[tuple[str, ToolResult]] = []
    for message in messages:
        name = names.get(message.tool_call_id or "")
        if message.role != "tool" or name is None or not message.content:
            continue
        try:
            found.append((name, ToolResult.model_validate_json(message.content)))
        except ValidationError:
            continue
    return found


def final_words(messages: Sequence[ChatMessage]) -> str:
    """The model's last answer of a run (not the loop's outcome summary around it)."""
    for message in reversed(messages):
        if message.role == "assistant" and message.content and message.content.strip():
            return message.content.strip()
    return ""


def may_test_write(rel: str) -> bool:
    """What the tester may write: test files, and anything in a test folder but the runners'
    config and plugin files (`RUNNER_FILES`)."""
    parts = PurePosixPath(rel).parts
    if not parts or RUNNER_FILES.fullmatch(parts[-1]):
        return False
    return is_test_file(rel) or parts[0] in TEST_FOLDERS


def judge(
    step: Step, outcome: TaskOutcome, results: Sequence[tuple[str, ToolResult]], words: str
) -> Verdict:
    """`words`: the model's last answer, the executor's and tester's summary."""
    said = words or outcome.summary
    if step.role == "run":
        return _run(said, [r for name, r in results if name == "run_command"])
    if step.role == "test":
        return _test(said, [r for name, r in results if name == "run_tests"])
    ok = outcome.status is TaskStatus.COMPLETED
    return Verdict(StepStatus.DONE if ok else StepStatus.FAILED, outcome.summary)


def _run(said: str, runs: list[ToolResult]) -> Verdict:
    if not runs:
        return Verdict(StepStatus.FAILED, f"the executor ran no command; it said: {said}")
    last = runs[-1]
    code = last.metadata.get("exit_code")
    if last.status is ToolStatus.SUCCESS and code in (0, None):
        return Verdict(StepStatus.DONE, f"exit code 0: {said}")
    why = last.error or "failed"
    return Verdict(StepStatus.FAILED, f"the command failed ({why}); the executor said: {said}")


def _test(said: str, runs: list[ToolResult]) -> Verdict:
    if runs and runs[-1].status is ToolStatus.SUCCESS:
        return Verdict(StepStatus.DONE, said)
    if not runs:
        cause = f"the tester ran no tests; it said: {said}"
    else:
        cause = f"{runs[-1].error}; root cause (the tester): {said}"
    return Verdict(StepStatus.PENDING, cause, tests_failed=True)
