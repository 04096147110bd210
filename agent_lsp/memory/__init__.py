"""Memory that survives: state files, the init.d rebuild, rules, experience files and their
index, session logs and checkpoints — all plain files under `.agent-lsp/`."""

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
