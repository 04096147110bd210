"""Test doubles for agent-lsp's external services."""

from .openai_server import Error, FakeOpenAIServer, Hang, Reply, ReplyFunc, ScriptEntry, ToolCall

__all__ = ["Error", "FakeOpenAIServer", "Hang", "Reply", "ReplyFunc", "ScriptEntry", "ToolCall"]
