"""`mcp_tools` and `mcp_call`: the tools of MCP servers, deferred.

The model does not get every MCP tool's schema in its request (they can fill a good share of
the context). It gets two tools whatever the servers offer: `mcp_tools`, whose description names
each server's tools with one line each (bounded), and which answers with the descriptions and
argument schemas of the tools asked for; and `mcp_call {server, tool, arguments}`, whose
arguments are checked against that tool's schema before anything is asked or sent. The tool
list of a request stays the same from the first request on, so a server's prompt cache keeps
its prefix. Every call goes through the policy (`CommandPolicy.check_mcp`): it asks unless the
server's `allow` list or a rule allows it; the server's own hints are not trusted."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.messages import ToolResult
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.tools.mcp_host import McpHost, McpServerError, McpToolInfo, skipped_note

__all__ = [
    "MCP_TOOL_NAMES",
    "McpCallTool",
    "McpToolsTool",
    "check_arguments",
    "mcp_listing",
    "schema_problems",
]

MCP_TOOL_NAMES = ("mcp_tools", "mcp_call")
LISTING_CHARS = 4_000  # the names and lines in `mcp_tools`' description, at most
LINE_CHARS = 100  # one tool's line
MAX_SCHEMA_CHARS = 200_000  # a tool's schema checked, at most (as JSON)
MAX_ARGUMENT_CHARS = 200_000  # a call's arguments checked, at most (as JSON)
CHECK_SECONDS = 10.0  # the longest a check of the arguments may take


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def mcp_listing(
    found: dict[str, list[McpToolInfo] | str],
    limit: int = LISTING_CHARS,
    skipped: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Each server with its tools' names and first lines (or why it has none), cut at `limit`
    characters with what was left out said; `skipped`: the tools left out for their names."""
    lines: list[str] = []
    size, left = 0, 0
    for server, tools in found.items():
        if isinstance(tools, str):
            entries = [f"{server}: not available ({tools})"]
        else:
            entries = [f"{server}:"] + [
                f"  {t.name}" + (f": {_first_line(t.description)}" if t.description else "")
                for t in tools
            ]
            if skipped and skipped.get(server):
                entries.append(f"  ({skipped_note(skipped[server])})")
        for entry in entries:
            if size + len(entry) + 1 > limit:
                left += 1
                continue
            lines.append(entry)
            size += len(entry) + 1
    if left:
        lines.append(f"… {left} more (mcp_tools with a server lists them all)")
    return "\n".join(lines)


class McpToolsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str | None = Field(None, description="Only this server's tools.")
    query: str | None = Field(
        None, description="Words to look for in the tools' names and descriptions."
    )


class McpToolsTool:
    name = "mcp_tools"
    args_model = McpToolsArgs
    read_only = True

    def __init__(self, host: McpHost) -> None:
        self.host = host
        self.description = (
            "The tools of MCP servers the user set up, listed here by name only. Call "
            "mcp_tools with a server (and optionally a query) to get their descriptions and "
            "argument schemas, then mcp_call to run one; each call may ask the user first.\n"
            + (
                mcp_listing(host.known(), skipped={n: host.skipped(n) for n in host.specs})
                or "Servers: " + ", ".join(host.specs)
            )
        )

    async def run(self, args: McpToolsArgs) -> ToolResult:
        names = [args.server] if args.server else list(self.host.specs)
        words = (args.query or "").lower().split()
        found: list[dict[str, Any]] = []
        problems: list[str] = []
        for server in names:
            try:
                tools = await self.host.tools(server)
            except McpServerError as exc:
                problems.append(str(exc))
                continue
            if left_out := self.host.skipped(server):
                problems.append(f"{server}: {skipped_note(left_out)}")
            for tool in tools:
                text = f"{tool.name} {tool.description}".lower()
                if all(w in text for w in words):
                    found.append(
                        {
                            "server": server,
                            "tool": tool.name,
                            "description": tool.description,
                            "arguments": tool.schema,
                        }
                    )
        if not found:
            why = "; ".join(problems) or "no tool matches" + (f" {args.query!r}" if words else "")
            return ToolResult.fail(why)
        text = "\n".join(json.dumps(entry, ensure_ascii=False) for entry in found)
        if problems:
            text += "\n" + "\n".join(problems)
        return ToolResult.ok(text, tools=len(found))


def schema_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Where `arguments` break the tool's JSON schema (empty: they fit, or the schema cannot
    be read, and the server is left to judge). The schema is the server's: a `$ref` to
    anything outside it (a URL, a `file://` path) is refused, never fetched by agent-lsp's
    own process — it would read the network or the host's files before anyone is asked.
    Blocking (a schema's patterns can be slow): run it off the event loop (`check_arguments`)."""
    from jsonschema import Draft202012Validator, SchemaError, validators
    from referencing import Registry, Resource
    from referencing.exceptions import NoSuchResource, Unresolvable

    def refuse(uri: str) -> Resource:
        raise NoSuchResource(ref=uri)

    try:
        kind = validators.validator_for(schema, default=Draft202012Validator)
        kind.check_schema(schema)
    except SchemaError:
        return []
    validator = kind(schema, registry=Registry(retrieve=refuse))
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    except Unresolvable as exc:
        return [f"its schema refers to {str(exc)[:200]!r} outside itself: not followed"]
    return [f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}" for e in errors[:5]]


async def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """`schema_problems` in a thread, bounded: a schema or arguments too large to check, or a
    check that takes too long, is a problem too."""
    for what, value, limit in (
        ("its schema is", schema, MAX_SCHEMA_CHARS),
        ("the arguments are", arguments, MAX_ARGUMENT_CHARS),
    ):
        size = len(json.dumps(value, ensure_ascii=False, default=str))
        if size > limit:
            return [f"{what} too large to check ({size} characters, at most {limit})"]
    try:
        return await asyncio.wait_for(
            asyncio.to_thread(schema_problems, schema, arguments), CHECK_SECONDS
        )
    except TimeoutError:
        return [f"checking the arguments against its schema took over {CHECK_SECONDS:.0f} s"]


class McpCallArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str = Field(min_length=1, description="The MCP server, as mcp_tools names it.")
    tool: str = Field(min_length=1, description="The tool of that server.")
    arguments: dict[str, Any] = Field(
        default={}, description="The tool's arguments, as its schema (from mcp_tools) says."
    )


class McpCallTool:
    name = "mcp_call"
    description = (
        "Run a tool of an MCP server: its arguments as the schema mcp_tools gave. Unless the "
        "user allowed that tool, the user is asked first; the server runs sandboxed."
    )
    args_model = McpCallArgs
    read_only = False
    slow = True  # it may wait for the user's answer
    self_gated = True  # asks in its own place (`check_mcp`), with the call shown whole

    def __init__(self, host: McpHost, policy: CommandPolicy, timeout: float) -> None:
        self.host = host
        self.policy = policy
        self.timeout = timeout

    async def run(self, args: McpCallArgs) -> ToolResult:
        spec = self.host.specs.get(args.server)
        if spec is None:
            known = ", ".join(self.host.specs)
            return ToolResult.fail(f"no MCP server {args.server!r} (servers: {known})")
        try:
            tools = {t.name: t for t in await self.host.tools(args.server)}
        except McpServerError as exc:
            return ToolResult.fail(str(exc))
        tool = tools.get(args.tool)
        if tool is None:
            names = ", ".join(tools) or "none"
            return ToolResult.fail(f"{args.server} has no tool {args.tool!r} (its tools: {names})")
        problems = await check_arguments(tool.schema, args.arguments)
        if problems:
            schema = json.dumps(tool.schema, ensure_ascii=False)[:MAX_SCHEMA_CHARS]
            return ToolResult.fail(
                f"invalid arguments for {args.server} {args.tool}: {'; '.join(problems)}; "
                f"its schema: {schema}"
            )
        shown = json.dumps(args.arguments, ensure_ascii=False, sort_keys=True)
        mode = self.host.shell_for(spec).sandbox.status().mode
        decision = await self.policy.check_mcp(
            args.server, args.tool, shown, args.tool in spec.allow, mode
        )
        meta: dict[str, Any] = {
            "server": args.server,
            "tool": args.tool,
            "decided_by": decision.decided_by,
            "decision": decision.model_dump(mode="json"),
        }
        if not decision.allowed:
            return ToolResult.fail(
                f"not run: {decision.decided_by}. Do without this tool or ask the user.", **meta
            )
        try:
            result = await self.host.call(args.server, args.tool, args.arguments, self.timeout)
        except McpServerError as exc:
            return ToolResult.fail(str(exc), **meta)
        text = result.text + (
            f"\n[agent-lsp: {result.note}: the agent may not create git, agent-lsp or editor "
            "configuration]"
            if result.note
            else ""
        )
        if result.restarted:
            text = f"[agent-lsp: {result.restarted}]\n" + text
        if result.is_error:
            return ToolResult.fail(f"{args.tool} reported an error", output=text, **meta)
        return ToolResult.ok(text or "(no output)", **meta)
