"""agent-lsp: an AI coding agent over the Language Server Protocol."""

__version__ = "0.1.0"
