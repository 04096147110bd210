"""One list of the contract's tools: the session builds exactly `CONTRACT_TOOLS`, in that order,
and the improvement self-check validates tool notes against the same names."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.config.schema import Settings
from agent_lsp.improve.check import TOOLS
from agent_lsp.loop.control import TaskControl
from agent_lsp.project.workspace import Workspace
from agent_lsp.session import Session
from agent_lsp.tools import CONTRACT_TOOLS
from tests.fakes.channel import RecordingChannel


def test_the_session_builds_the_contract_tools_in_order(project: Path) -> None:
    session = Session(project, Settings.model_validate({}))
    channel = RecordingChannel()
    workspace = Workspace(project, channel, session.gate(channel))
    built = session.tools(workspace, channel, TaskControl(channel, 1.0))
    assert [tool.name for tool in built] == [cls.name for cls in CONTRACT_TOOLS]
    assert [t.name for t in TOOLS] == [*(cls.name for cls in CONTRACT_TOOLS), "propose_improvement"]
