"""The commander: the user's words, the README's head and the config files at the root → a
task record (`record.TaskRecord`), the first act of PLANNING. One retry after an answer that is
not a record; a diagnose-only record ends the task with its diagnosis, nothing written."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.errors import AgentLspError
from agent_lsp.messages import TaskStatus
from agent_lsp.project.readme import readme_head as head_of_readme
from agent_lsp.project.workspace import Workspace
from agent_lsp.team.record import TaskRecord, read_record
from agent_lsp.team.roles import COMMANDER
from agent_lsp.team.runner import RoleRunner

README_CHARS = 3000  # the README's head the commander is given
CONFIG_NAMES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "pytest.ini",
    "requirements.txt",
    "Pipfile",
    "package.json",
    "tsconfig.json",
    "jest.config.js",
    "vitest.config.ts",
    "go.mod",
    "Makefile",
    "Dockerfile",
    ".env.example",
    ".agent-lsp/config.toml",
)


def readme_head(workspace: Workspace) -> str:
    """The README's head the commander is given (`project.readme`)."""
    return head_of_readme(workspace, README_CHARS)


def config_files(root: Path) -> list[str]:
    """The config files at the project's root, by name only."""
    return [name for name in CONFIG_NAMES if (root / name).is_file()]


async def command(runner: RoleRunner, instruction: str) -> TaskRecord | str:
    """The task record, or why there is none (the reason the task fails)."""
    root = runner.host.root
    offered = {
        "task": instruction,
        "readme": readme_head(Workspace(root, runner.channel, runner.host.gate(runner.channel))),
        "config_files": "\n".join(config_files(root)) or "(none)",
    }
    why = ""
    for attempt in (1, 2):
        label = "commander" if attempt == 1 else "commander (retry)"
        outcome, _ = await runner.run(COMMANDER, offered, label)
        if outcome.status is not TaskStatus.COMPLETED:
            return f"the commander stopped: {outcome.summary}"
        try:
            return read_record(outcome.summary)
        except AgentLspError as exc:
            why = str(exc)
        offered["note"] = (
            f"Your last answer was refused: {why}. Answer again with ONE fenced ```json block "
            "holding the task record object, nothing else."
        )
    return f"no task record after a retry: {why}"


def diagnosis_summary(record: TaskRecord) -> str:
    text = record.diagnosis.strip() or record.goal
    return f"diagnosis ({record.problem} problem, nothing changed): {text}"
