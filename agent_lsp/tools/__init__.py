"""Model-facing tools (names and arguments are a contract, see docs/architecture.md)."""

from agent_lsp.tools.files import EditFileTool, ReadFileTool
from agent_lsp.tools.testing import RunTestsTool
from agent_lsp.tools.toolbox import ToolBox

__all__ = ["EditFileTool", "ReadFileTool", "RunTestsTool", "ToolBox"]
