"""Memory that survives: state files, the init.d rebuild, rules, experience files and their
index, session logs and checkpoints — all plain files under `.agent-lsp/`.

May import: `agent_lsp.project`, `agent_lsp.safety`, `agent_lsp.config`, the shared root
modules and `adapters`; not the loop, the tools or the front ends.
"""

from agent_lsp.memory.library import MemoryEntry
from agent_lsp.memory.project import ProjectMemory, RememberResult, ResumeOffer
from agent_lsp.memory.undo import UndoReport

__all__ = [
    "MemoryEntry",
    "ProjectMemory",
    "RememberResult",
    "ResumeOffer",
    "UndoReport",
]
