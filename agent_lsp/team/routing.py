"""Context routing: a role's first message is built from the keys it declares, only those.
The orchestrator offers every key it has; what a role did not declare never reaches it."""

from __future__ import annotations

from collections.abc import Mapping

from agent_lsp.team.roles import Role

TITLES = {
    "task": "The task",
    "readme": "The project's README (its head)",
    "config_files": "Config files at the project's root",
    "record": "The task record",
    "template": "The template of this type of task",
    "failed_steps": "Steps that failed and must be planned again",
    "plan_state": "The plan so far (a plan review)",
    "step": "Your step",
    "step_files": "Files of your step",
    "locate": "The step to find the code for",
    "snippets": "The code of your step (the lines the retriever located)",
    "step_text": "The text of your step's files",
    "step_done": "The step is done when",
    "note": "Notes for this step (why it runs, what failed)",
    "diff_files": "Files the team changed",
    "suite": "The full test suite",
    "diff": "The merged diff",
    "checks": "Findings of the checks already run (whitespace, secrets, ignored errors, lint)",
    "findings": "Review findings: plan the steps that resolve them",
    "continued": "The task stopped before; the user continues it with a hint",
    "steer": "Notes from the user, sent while the team worked (oldest first)",
    "decisions": "The team's decisions in this task so far (oldest first)",
    "handover": "The hand-over of the team's previous task on this project",
}


def first_message(role: Role, offered: Mapping[str, str]) -> str:
    """The role's marker and prompt, then one section per declared key that has a value."""
    parts = [f"{role.marker}\n{role.prompt}"]
    for key in role.keys:
        value = offered.get(key, "").strip("\n")  # a diff's trailing blanks are its content
        if value.strip():
            parts.append(f"## {TITLES.get(key, key)}\n{value}")
    return "\n\n".join(parts)


def routed_keys(role: Role, offered: Mapping[str, str]) -> list[str]:
    """The keys that went into the role's message (for the log)."""
    return [k for k in role.keys if offered.get(k, "").strip()]
