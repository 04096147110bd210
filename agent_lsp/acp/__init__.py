"""The Agent Client Protocol front end: `agent-lsp acp`, an ACP agent over stdio on the same
core as the language server (a `Session` per ACP session, its `run_task` per prompt; no loop
of its own). The only package that imports the ACP SDK (`acp`).

May import everything of the core (the session, the loop, memory, ...); only the CLI imports it.
"""

from agent_lsp.acp.stdio import serve

__all__ = ["serve"]
