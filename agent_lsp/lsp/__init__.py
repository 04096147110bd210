"""The LSP interface: the only package that imports pygls and lsprotocol.

May import everything of the core (the session, the loop, memory, ...); only the CLI imports it.
"""

from agent_lsp.lsp.server import create_server

__all__ = ["create_server"]
