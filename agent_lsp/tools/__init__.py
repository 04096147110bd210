"""Model-facing tools (names and arguments are a contract, see docs/architecture.md): each a
`seams.Tool`, run by the loop's `ToolBox`.

May import: `agent_lsp.loop` (verification, the task's control), `agent_lsp.memory`,
`agent_lsp.symbols`, `agent_lsp.project`, `agent_lsp.safety`, `agent_lsp.config`, the shared
root modules and `adapters`; `mcp_host.py` alone the `mcp` SDK.
"""

from agent_lsp.tools.ask import AskUserTool
from agent_lsp.tools.commands import RunCommandTool
from agent_lsp.tools.create import WriteFileTool
from agent_lsp.tools.diagnostics import GetDiagnosticsTool
from agent_lsp.tools.files import EditFileTool, ReadFileTool
from agent_lsp.tools.git import GitDiffTool, GitStatusTool
from agent_lsp.tools.mcp_tools import MCP_TOOL_NAMES, McpCallTool, McpToolsTool
from agent_lsp.tools.notes import RememberTool, UpdateTaskTool
from agent_lsp.tools.project import ProjectTool, read_project_tools
from agent_lsp.tools.search import ListFilesTool, SearchTextTool
from agent_lsp.tools.symbols import FindSymbolTool
from agent_lsp.tools.testing import RunTestsTool

# Every tool of the contract, in the order the model sees them (the session builds them so).
CONTRACT_TOOLS = (
    ReadFileTool,
    ListFilesTool,
    SearchTextTool,
    FindSymbolTool,
    EditFileTool,
    WriteFileTool,
    RunTestsTool,
    RunCommandTool,
    GitStatusTool,
    GitDiffTool,
    GetDiagnosticsTool,
    RememberTool,
    UpdateTaskTool,
    AskUserTool,
)
# Names a project tool (.agent-lsp/tools.toml) may not take: the contract's, the MCP servers'
# (offered only when servers are set up) and improve's.
RESERVED_NAMES = {tool.name for tool in CONTRACT_TOOLS} | {*MCP_TOOL_NAMES, "propose_improvement"}

__all__ = [
    "CONTRACT_TOOLS",
    "MCP_TOOL_NAMES",
    "RESERVED_NAMES",
    "AskUserTool",
    "EditFileTool",
    "FindSymbolTool",
    "GetDiagnosticsTool",
    "GitDiffTool",
    "GitStatusTool",
    "ListFilesTool",
    "McpCallTool",
    "McpToolsTool",
    "ProjectTool",
    "ReadFileTool",
    "RememberTool",
    "RunCommandTool",
    "RunTestsTool",
    "SearchTextTool",
    "UpdateTaskTool",
    "WriteFileTool",
    "read_project_tools",
]
