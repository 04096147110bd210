"""What team mode needs of the session (`agent_lsp.session.Session` is one): a protocol, so
that this package does not import the session above it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from adapters.linters import LintIssue
from agent_lsp.config.schema import Settings
from agent_lsp.loop.agent import Agent
from agent_lsp.loop.control import TaskControl
from agent_lsp.loop.verify import Verifier
from agent_lsp.memory.project import ProjectMemory
from agent_lsp.project.git import Git
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.seams import EditorChannel, Model


class TeamHost(Protocol):
    @property
    def root(self) -> Path: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def verifier(self) -> Verifier | None: ...

    control: TaskControl | None  # the running task's: `Session.steer` reaches it

    @property
    def memory(self) -> ProjectMemory:
        """The project's memory: the starting context, the task file, experiences."""
        ...

    @property
    def git(self) -> Git:
        """Read-only git (the review's diff against HEAD)."""
        ...

    async def profile(self) -> str: ...

    def record(self, kind: str, source: str, **data: Any) -> None:
        """A line of the session log (`agent-lsp log`): the team's start and end, every
        role's model and tool calls."""
        ...

    async def lint(self, channel: EditorChannel) -> list[LintIssue]:
        """The project's linters on the editor's text."""
        ...

    def routed(self, kind: str, tools: bool = True) -> Model:
        """The model of a kind of call (`model.routes`): "distillation" for the experience."""
        ...

    def gate(self, channel: EditorChannel) -> CommandPolicy:
        """The permission gate (the user's policy) the team's own test run goes through."""
        ...

    def make_agent(
        self,
        channel: EditorChannel,
        profile: str,
        repo: str = "",
        read_only: bool = False,
        control: TaskControl | None = None,
    ) -> Agent: ...
