"""The LSP interface: the only package that imports pygls and lsprotocol."""

from agent_lsp.lsp.server import create_server

__all__ = ["create_server"]
