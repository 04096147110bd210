"""What MCP servers cost every request: their tools inline (each tool's name, description and
JSON schema in the request's tool list, as most agents send them) against agent-lsp's deferred
listing (`mcp_tools`, whose description names each tool with its first line, and `mcp_call`;
a schema reaches the context only when the model asks `mcp_tools` for it).

Real servers from npm, their tools listed over MCP with the `mcp` SDK: server-everything,
server-filesystem, server-github and server-memory (installed by this script into
~/.cache/agent-lsp-bench/npm-mcp). Tokens: the served model's tokenizer when a llama.cpp-style
server answers at --tokenizer (POST /extras/tokenize/count), else 4 characters a token (said).

Run: .venv/bin/python bench/mcp_tokens.py [--tokenizer http://127.0.0.1:8080]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from agent_lsp.tools.mcp_host import McpToolInfo
from agent_lsp.tools.mcp_tools import McpCallArgs, McpCallTool, McpToolsArgs, mcp_listing

CACHE = Path.home() / ".cache" / "agent-lsp-bench" / "npm-mcp"
PACKAGES = {
    "everything": "@modelcontextprotocol/server-everything@2026.8.31",
    "filesystem": "@modelcontextprotocol/server-filesystem@2026.8.31",
    "github": "@modelcontextprotocol/server-github@2025.4.8",
    "memory": "@modelcontextprotocol/server-memory@2026.8.31",
}
BINS = {
    "everything": "server-everything/dist/index.js",
    "filesystem": "server-filesystem/dist/index.js",
    "github": "server-github/dist/index.js",
    "memory": "server-memory/dist/index.js",
}
LISTING_HEAD = (
    "The tools of MCP servers the user set up, listed here by name only. Call mcp_tools with a "
    "server (and optionally a query) to get their descriptions and argument schemas, then "
    "mcp_call to run one; each call may ask the user first.\n"
)


def install() -> None:
    if all((CACHE / "node_modules" / "@modelcontextprotocol" / b).is_file() for b in BINS.values()):
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *PACKAGES.values()],
        check=True,
        stdout=subprocess.DEVNULL,
    )


async def list_tools(name: str, folder: Path) -> list[McpToolInfo]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    script = CACHE / "node_modules" / "@modelcontextprotocol" / BINS[name]
    args = [str(script), *([str(folder)] if name == "filesystem" else [])]
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(folder)}
    if name == "memory":
        env["MEMORY_FILE_PATH"] = str(folder / "memory.json")
    params = StdioServerParameters(command=shutil.which("node") or "node", args=args, env=env)
    with (folder / f"{name}.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
    return [McpToolInfo(t.name, t.description or "", dict(t.input_schema)) for t in listed.tools]


def function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def inline_tools(found: dict[str, list[McpToolInfo]]) -> list[dict[str, Any]]:
    return [
        function(f"mcp__{server}__{t.name}", t.description, t.schema)
        for server, tools in found.items()
        for t in tools
    ]


def deferred_tools(found: dict[str, list[McpToolInfo]]) -> list[dict[str, Any]]:
    listing = mcp_listing(dict(found))  # pyright: ignore[reportArgumentType]
    return [
        function("mcp_tools", LISTING_HEAD + listing, McpToolsArgs.model_json_schema()),
        function("mcp_call", McpCallTool.description, McpCallArgs.model_json_schema()),
    ]


class Counter:
    def __init__(self, url: str | None) -> None:
        self.url = url
        self.exact = url is not None

    def __call__(self, text: str) -> int:
        if self.url is not None:
            try:
                body = json.dumps({"input": text}).encode()
                request = urllib.request.Request(
                    f"{self.url.rstrip('/')}/extras/tokenize/count",
                    data=body,
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=60) as answer:
                    return int(json.loads(answer.read())["count"])
            except (OSError, ValueError, KeyError):
                self.exact = False
                self.url = None
        return max(1, len(text) // 4)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokenizer", help="a llama.cpp-style server's base URL (no /v1)")
    args = parser.parse_args()
    install()
    count = Counter(args.tokenizer)
    found: dict[str, list[McpToolInfo]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in BINS:
            folder = Path(scratch) / name
            folder.mkdir()
            found[name] = asyncio.run(list_tools(name, folder))
    rows: list[tuple[str, int, int, int, int]] = []
    for servers in (["everything"], ["everything", "filesystem", "github"], list(BINS)):
        chosen = {s: found[s] for s in servers}
        inline = count(json.dumps(inline_tools(chosen)))
        deferred = count(json.dumps(deferred_tools(chosen)))
        # the one schema a task that uses one tool loads (the largest: the worst case)
        largest = max(
            count(json.dumps(t.schema)) + count(t.description) for s in chosen.values() for t in s
        )
        tools = sum(len(t) for t in chosen.values())
        rows.append(("+".join(servers), tools, inline, deferred, deferred + largest))
    unit = "tokens (the served model's tokenizer)" if count.exact else "tokens (~4 characters each)"
    print(
        "| servers | tools | inline, every request | deferred, every request "
        f"| deferred + the largest schema loaded once | {unit}"
    )
    print("| --- | --- | --- | --- | --- |")
    for servers, tools, inline, deferred, loaded in rows:
        share = f"{deferred / inline:.0%}"
        print(f"| {servers} | {tools} | {inline:,} | {deferred:,} ({share}) | {loaded:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
