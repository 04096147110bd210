"""Model implementations: any OpenAI-compatible endpoint, and a scripted stand-in."""

from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.models.scripted import ScriptedModel

__all__ = ["OpenAICompatModel", "ScriptedModel"]
