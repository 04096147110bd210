"""An MCP server for the tests whose tools change while it runs: `grow` adds the tool `second`
and says so (a `subscriptions/listen` event); `freeze` says so too, and from then on never
answers `tools/list`. Run as `python tests/mcp/growing_server.py` (stdio)."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

frozen = asyncio.Event()


class Growing(MCPServer):
    async def list_tools(self) -> Any:
        if frozen.is_set():
            await asyncio.sleep(3600)
        return await super().list_tools()


app = Growing("growing")


def second() -> str:
    """Added by grow."""
    return "second ran"


@app.tool(name="grow")
async def grow(ctx: Context) -> str:
    """Adds the tool `second`."""
    app.add_tool(second, name="second")
    await ctx.notify_tools_changed()
    return "grown"


@app.tool(name="freeze")
async def freeze(ctx: Context) -> str:
    """Says the tools changed, then never lists them again."""
    frozen.set()
    await ctx.notify_tools_changed()
    return "frozen"


if __name__ == "__main__":
    app.run()
