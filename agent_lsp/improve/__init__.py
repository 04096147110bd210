"""Self-improvement: `agent-lsp improve "…"` proposes a change to agent-lsp's own setup for the
project (settings of `.agent-lsp/config.toml`, prompt notes, tool notes, project tools); it is
guarded (never the endpoint, permission level, sandbox, policy or trust, nothing
`UNTRUSTED_RULES` counts as widening), self-checked on a copy, applied atomically, logged and
revertible one by one.

Beside `agent_lsp.session` in the layers: may import the tools, the loop, memory, safety,
config, the shared root modules and `adapters`; never the session or a front end."""

from agent_lsp.improve.apply import (
    Improvement,
    apply_improvement,
    list_improvements,
    plan,
    revert_improvement,
)
from agent_lsp.improve.files import FileChange, ImprovementError
from agent_lsp.improve.patch import (
    ConfigChange,
    ImprovementPatch,
    ProjectToolChange,
    ToolNote,
    refusals,
)
from agent_lsp.improve.task import improve_task, unified_diff
from agent_lsp.improve.tool import ProposeImprovementTool

__all__ = [
    "ConfigChange",
    "FileChange",
    "Improvement",
    "ImprovementError",
    "ImprovementPatch",
    "ProjectToolChange",
    "ProposeImprovementTool",
    "ToolNote",
    "apply_improvement",
    "improve_task",
    "list_improvements",
    "plan",
    "refusals",
    "revert_improvement",
    "unified_diff",
]
