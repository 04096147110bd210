"""Wires the core for one project: settings, model, toolchain, verifier, tools -> an `Agent`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters import PosixShell, describe_project, detect_toolchain
from agent_lsp.agent import Agent
from agent_lsp.messages import TaskOutcome
from agent_lsp.project import project_status
from agent_lsp.seams import EditorChannel, Model
from agent_lsp.settings import Settings
from agent_lsp.task import Task
from agent_lsp.tools import EditFileTool, ReadFileTool, RunTestsTool, ToolBox
from agent_lsp.verify import Verifier
from agent_lsp.workspace import Workspace


def make_model(settings: Settings) -> Model:
    """The configured OpenAI-compatible model (the `openai` import is deferred to here)."""
    from agent_lsp.models.openai_compat import OpenAICompatModel

    return OpenAICompatModel(settings.model)


class Session:
    """Long-lived per project (one per LSP server or CLI run); tasks share its shadow copy."""

    def __init__(self, root: Path, settings: Settings, model: Model | None = None) -> None:
        self.root = root.resolve()
        self.settings = settings
        self._model = model
        self.shell = PosixShell()
        self._verifier: Verifier | None = None
        self._profile: str | None = None

    @property
    def model(self) -> Model:
        if self._model is None:
            self._model = make_model(self.settings)
        return self._model

    def update_settings(self, settings: Settings) -> None:
        if settings.model != self.settings.model:
            self._model = None
        self.settings = settings

    async def profile(self) -> str:
        """Toolchain profile (cached) and the git status (fresh for every task)."""
        if self._profile is None:
            self._profile = await asyncio.to_thread(describe_project, self.root)
        status = await asyncio.to_thread(project_status, self.root)
        return f"{self._profile}\n{status}"

    @property
    def verifier(self) -> Verifier | None:
        if self._verifier is None:
            adapter = detect_toolchain(self.root)
            if adapter is not None:
                self._verifier = Verifier(
                    self.root, adapter, self.shell, self.settings.tests.timeout
                )
        return self._verifier

    def make_agent(self, channel: EditorChannel, profile: str) -> Agent:
        workspace = Workspace(self.root, channel)
        verifier = self.verifier
        tools = [
            ReadFileTool(workspace),
            EditFileTool(workspace),
            RunTestsTool(workspace, verifier),
        ]
        toolbox = ToolBox(
            tools, timeout=self.settings.tool_timeout, slow_timeout=self.settings.tests.timeout + 30
        )
        return Agent(
            self.model,
            toolbox,
            workspace,
            channel,
            verifier,
            profile,
            self.settings.max_steps,
        )

    async def run_task(self, task: Task, channel: EditorChannel) -> TaskOutcome:
        return await self.make_agent(channel, await self.profile()).run(task)

    def close(self) -> None:
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None

    async def aclose(self) -> None:
        self.close()
        close = getattr(self._model, "aclose", None)
        if close is not None:
            await close()
