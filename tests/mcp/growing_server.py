"""An MCP server for the tests whose tools change while it runs: `grow` adds the tool `second`
and says so (`notifications/tools/list_changed`). Run as `python tests/mcp/growing_server.py`
(stdio)."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("growing")


def second() -> str:
    """Added by grow."""
    return "second ran"


@app.tool(name="grow")
async def grow(ctx: Context) -> str:
    """Adds the tool `second`."""
    app.add_tool(second, name="second")
    await ctx.notify_tools_changed()
    return "grown"


if __name__ == "__main__":
    app.run()
