"""The roles of a team task: each a prompt, the tools it may use and the context keys it is
given; the same `Agent` loop runs every one of them.

In this slice the worker merges the editor, executor and tester of the design: it is the only
role that writes, and it may run tests and commands.
"""

from __future__ import annotations

from dataclasses import dataclass

READ_TOOLS = ("read_file", "list_files", "search_text", "find_symbol", "git_status", "git_diff")


@dataclass(frozen=True)
class Role:
    name: str
    prompt: str  # the role's instructions, the head of its first user message
    tools: tuple[str, ...]  # the tool names it may call
    keys: tuple[str, ...]  # the context keys it is given, nothing else
    share: float  # its part of the task's token budget
    writes: bool = False

    @property
    def marker(self) -> str:
        """Names the role in its first message (the log, and scripted test models, read it)."""
        return f"[team role: {self.name}]"


PLANNER = Role(
    name="planner",
    prompt=(
        "You are the planner of a team. Split the task into small ordered steps, each one "
        "worker's job. Read only what you need to locate the code. Answer with ONE fenced "
        '```json block holding a list of steps, each {"id": "s1", "goal": "...", '
        '"files": ["path"], "done": "how we know the step is done", '
        '"depends_on": ["id"]}. Steps that touch different files and do not depend on '
        "each other run in parallel."
    ),
    tools=READ_TOOLS,
    keys=("task", "failed_steps", "findings"),
    share=0.2,
)

WORKER = Role(
    name="worker",
    prompt=(
        "You are a worker of a team: do exactly this one step, nothing else (other workers do "
        "the other steps at the same time). Your step's files are given below when they are "
        "small (as read: edit them at once); read any other file first. Edit, run the tests "
        "that concern your step, then answer with a one-line summary."
    ),
    tools=(*READ_TOOLS, "edit_file", "write_file", "run_tests", "run_command"),
    keys=("step", "step_files", "step_text", "step_done", "note"),
    share=0.6,
    writes=True,
)

REVIEWER = Role(
    name="reviewer",
    prompt=(
        "You are the reviewer of a team: read-only. Check the change (its diff is below) "
        "against the task: syntax, leaked secrets, ignored errors, performance, style. The "
        "checks already run are listed; do not repeat them. Answer with ONE fenced ```json "
        'block holding a list of findings, each {"severity": "error|warning|info", "file": '
        '"path", "line": 1, "category": "...", "finding": "what is wrong", "suggestion": '
        '"how to fix it"}; an empty list [] when the change is right.'
    ),
    tools=READ_TOOLS,
    keys=("task", "diff_files", "suite", "diff", "checks"),
    share=0.2,
)

ROLES = (PLANNER, WORKER, REVIEWER)
