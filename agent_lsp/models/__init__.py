"""Model implementations (`seams.Model`): any OpenAI-compatible endpoint, per-task-kind routes
with fallback, a plain-text tool protocol, and a scripted stand-in.

The only package that imports `openai`. May import: `agent_lsp.config` and the shared root
modules.
"""

from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.models.scripted import ScriptedModel

__all__ = ["OpenAICompatModel", "ScriptedModel"]
