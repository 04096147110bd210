"""The planner's per-type templates: the stages a plan of that kind of task goes through, each
with its definition of done; the planner turns them into the task's own steps."""

from __future__ import annotations

from agent_lsp.team.record import TaskType

# (stage, its definition of done) per type, in order
TEMPLATES: dict[TaskType, tuple[tuple[str, str], ...]] = {
    TaskType.BUG_FIX: (
        ("locate the error", "the failing line and the symptom are named"),
        ("trace the call chain", "the path from the entry point to the fault is known"),
        ("reproduce", "a test or command fails the way the user saw"),
        ("fix", "the reproduction passes"),
        ("add a test", "a test that failed before the fix passes now"),
    ),
    TaskType.REFACTOR: (
        ("map the structure", "the modules and what each owns are listed"),
        ("find the couplings", "the calls and imports across modules are known"),
        ("rewrite module by module", "each module changed keeps its public names"),
        ("tests", "the tests of each changed module pass"),
        ("full regression", "the whole suite passes"),
    ),
    TaskType.FEATURE: (
        ("locate where it goes", "the modules and functions to extend are named"),
        ("implement it module by module", "each part does what the goal says"),
        ("add tests", "tests of the new behaviour pass"),
        ("full regression", "the whole suite passes"),
    ),
    TaskType.TESTS: (
        ("locate the code under test", "its public functions and edge cases are listed"),
        ("write the tests", "new tests exist for each listed case"),
        ("run them", "the new tests pass (or fail only on a real bug, reported)"),
    ),
    TaskType.DIAGNOSIS: (
        ("locate the error", "the failing line and the symptom are named"),
        ("trace the cause", "the cause is named: code, config or environment"),
    ),
}


def template_text(kind: TaskType) -> str:
    """The template as the planner reads it."""
    lines = [f"A {kind.value.replace('_', ' ')} goes through these stages (make them steps):"]
    for n, (stage, done) in enumerate(TEMPLATES[kind], 1):
        lines.append(f"{n}. {stage} — done when {done}")
    return "\n".join(lines)
