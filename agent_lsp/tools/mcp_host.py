"""MCP servers as a tool source: `McpHost` starts each server at its first use — inside the
sandbox, its argv wrapped by `ConfinedShell.server_argv` exactly as a command's — lists its tools
once, calls them, and stops every server when the session ends.

The one module that speaks MCP (the `mcp` SDK, imported when a server starts). The servers live
on an event loop of their own in a thread of their own: a task on any loop can call them (the
language server runs tasks on the agent thread's loop, the CLI on its own), and a plain
`close()` stops them. Every failure is one line (`McpServerError`), never a traceback."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import json
import logging
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from agent_lsp import __version__
from agent_lsp.errors import AgentLspError
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.protect import Identity
from agent_lsp.safety.sandbox import SandboxError

__all__ = [
    "TOOL_NAME",
    "McpHost",
    "McpResult",
    "McpServerError",
    "McpServerSpec",
    "McpToolInfo",
    "skipped_note",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
START_TIMEOUT = 30.0  # seconds a server gets to start and list its tools
STOP_TIMEOUT = 8.0  # seconds `close` waits for the servers to end
MAX_PAGES = 20  # tools/list pages read of one server
MAX_TOOLS = 200  # tools kept of one server (the rest left out, as names said once)
MAX_RESULT_CHARS = 1_000_000  # a result's text kept (the tool box then keeps head and tail)
# A tool's name as the MCP spec suggests it: what a question shows and a rule names. Others
# (blank-looking letters that pad a forged question, `__` tricks) are left out.
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def skipped_note(names: Sequence[str]) -> str:
    """What is said once of a server's tools left out for their names."""
    return f"{len(names)} tool(s) left out: a tool's name must be 1 to 64 of A-Z a-z 0-9 _ . -"


class McpServerError(AgentLspError):
    """An MCP server could not start, answer or be reached: one line for the model and the user."""


@dataclass(frozen=True)
class McpServerSpec:
    """One server: from the user's config, or passed by an ACP client (`source`)."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    network: bool = False
    allow: frozenset[str] = frozenset()
    readable: tuple[Path, ...] = ()
    source: str = "user config"


@dataclass(frozen=True)
class McpToolInfo:
    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class McpResult:
    text: str
    is_error: bool
    note: str = ""  # what the sandbox had to undo after the call (a `.git` it made …)
    restarted: str = ""  # why the server was started again before the call


@dataclass
class _Link:
    """One server's connection, owned by a task on the host's loop."""

    spec: McpServerSpec
    shell: ConfinedShell
    tools: list[McpToolInfo] | None = None
    skipped: list[str] = field(default_factory=list[str])  # tools whose names are refused
    error: str | None = None
    client: Any = None
    # the protected entries of the workspace before the server started, and the empty
    # read-only folders its sandbox put where protected names were missing (`server_argv`)
    before: dict[Path, dict[Path, Identity]] = field(
        default_factory=dict[Path, dict[Path, Identity]]
    )
    masks: tuple[Path, ...] = ()
    secrets: dict[Path, Identity] | None = None  # the secret files hidden from it, at start
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None
    stale: bool = False  # the server said its tools changed (`notifications/tools/list_changed`)


def program_folders(argv: Sequence[str], home: Path) -> tuple[Path, ...]:
    """Where a server's program lives when that is in the home, which the sandbox hides: for
    the program and each argument that is a file there, its folder — the one holding its
    `node_modules` for a file inside one, a virtualenv's root for its `bin/` — shown back
    read-only (the sandbox still leaves out credential folders)."""
    home = Path(os.path.realpath(home))
    found: list[Path] = []
    for i, arg in enumerate(argv):
        path = shutil.which(arg) if i == 0 and os.sep not in arg else arg
        if not path or not Path(path).is_absolute() or not Path(path).is_file():
            continue
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(home):
            continue
        folder = real.parent
        if "node_modules" in real.parts:
            folder = Path(*real.parts[: real.parts.index("node_modules")])
        elif folder.name == "bin" and (folder.parent / "pyvenv.cfg").is_file():
            folder = folder.parent
        if folder != home:
            found.append(folder)
    return tuple(dict.fromkeys(found))


def server_path(path: str, root: Path) -> str:
    """`PATH` without what the repository could fill: relative and empty entries (the folder
    a program starts in) and entries inside the workspace (an activated `.venv/bin`)."""
    real = Path(os.path.realpath(root))
    kept = [
        entry
        for entry in path.split(os.pathsep)
        if entry
        and Path(entry).is_absolute()
        and not Path(os.path.realpath(entry)).is_relative_to(real)
    ]
    return os.pathsep.join(dict.fromkeys(kept))


def server_program(command: Sequence[str], root: Path, path: str) -> tuple[str, ...]:
    """`command` with its program resolved here, on the host, to an absolute path (looked up
    on `path` for a bare name): a program the workspace holds is refused (the repository
    would run as the user's server, with its `env` and network), as is a relative path."""
    program = command[0] if command else ""
    if not program:
        raise McpServerError("no program to start")
    if os.sep in program and not Path(program).is_absolute():
        raise McpServerError(
            f"{program}: a relative path; give the program's absolute path or its name on PATH"
        )
    found = program if Path(program).is_absolute() else shutil.which(program, path=path)
    if not found or not Path(found).is_file():
        raise McpServerError(f"{program}: no such program")
    real = Path(os.path.realpath(found))
    if real.is_relative_to(Path(os.path.realpath(root))):
        raise McpServerError(
            f"{program} is {real}, inside the workspace: the repository's own program is not "
            "started as your server"
        )
    return (found, *command[1:])


def _one_line(exc: BaseException) -> str:
    """The innermost error of `exc` (task groups wrap them) as one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def _tail(errlog: IO[str]) -> str:
    """The last line the server wrote on stderr (bwrap's or its own complaint)."""
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [ln.strip() for ln in errlog.read()[-4000:].splitlines() if ln.strip()]
    except (OSError, ValueError):
        return ""
    return lines[-1][:300] if lines else ""


def result_text(result: Any) -> str:
    """A tool result's content as text: text as it is, resources by their text or uri, images
    and audio by their kind and size; structured content when there is nothing else."""
    parts: list[str] = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(block.text))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif kind == "resource":
            inner = block.resource
            text = getattr(inner, "text", None)
            parts.append(str(text) if text is not None else f"[resource {inner.uri} (binary)]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, indent=1))
    text = "\n".join(parts)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[... {len(text) - MAX_RESULT_CHARS} characters cut]"
    return text


class McpHost:
    """The session's MCP servers: started lazily, one loop thread for all, stopped at `close`."""

    def __init__(
        self,
        root: Path,
        shell_for: Callable[[McpServerSpec], ConfinedShell],
        specs: Sequence[McpServerSpec] = (),
        start_timeout: float = START_TIMEOUT,
        on_event: Callable[[str, str, str], None] | None = None,
    ) -> None:
        """`shell_for`: the confined shell a server runs in (its network, the workspace
        writable as for commands); `on_event(server, event, detail)`: started / failed /
        stopped, for the session log."""
        self.root = root
        self.shell_for = shell_for
        self.specs: dict[str, McpServerSpec] = {}
        self.start_timeout = start_timeout
        self.on_event = on_event
        self._links: dict[str, _Link] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.add(specs)

    def add(self, specs: Sequence[McpServerSpec]) -> list[str]:
        """More servers (an ACP client's); a name taken already gets a number. The names."""
        names: list[str] = []
        for spec in specs:
            name, n = spec.name, 2
            while name in self.specs:
                name, n = f"{spec.name}-{n}", n + 1
            self.specs[name] = McpServerSpec(
                name,
                spec.command,
                spec.env,
                spec.network,
                spec.allow,
                spec.readable,
                spec.source,
            )
            names.append(name)
        return names

    # -- what the tools ask ------------------------------------------------------------------

    def known(self) -> dict[str, list[McpToolInfo] | str]:
        """Each server's tools as listed so far, or why it has none (an error), without
        starting anything; a server not started yet is left out."""
        out: dict[str, list[McpToolInfo] | str] = {}
        for name in self.specs:
            link = self._links.get(name)
            if link is None or not link.ready.is_set():
                continue
            out[name] = link.tools if link.tools is not None else (link.error or "not started")
        return out

    def skipped(self, name: str) -> list[str]:
        """The tools of server `name` left out for their names (as listed so far)."""
        link = self._links.get(name)
        return list(link.skipped) if link is not None else []

    async def start_all(self) -> dict[str, list[McpToolInfo] | str]:
        """Every server started (at once) and listed: its tools, or its error in one line."""
        names = list(self.specs)
        found = await asyncio.gather(*(self.tools(n) for n in names), return_exceptions=True)
        await self._on_host(self._tidy_running())
        out: dict[str, list[McpToolInfo] | str] = {}
        for name, got in zip(names, found, strict=True):
            if isinstance(got, McpServerError):
                out[name] = str(got)
            elif isinstance(got, BaseException):
                raise got
            else:
                out[name] = got
        return out

    async def tools(self, name: str) -> list[McpToolInfo]:
        """The tools of server `name`, starting it if it has not started, listed again when it
        said they changed; `McpServerError`."""
        link = await self._on_host(self._listed(name))
        if link.tools is None:
            raise McpServerError(link.error or f"MCP server {name} did not start")
        return link.tools

    async def call(
        self,
        name: str,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,  # noqa: ASYNC109 - the call's own limit, said in its error
    ) -> McpResult:
        """Call `tool` of server `name`; `McpServerError` when the server cannot answer."""
        return await self._on_host(self._call(name, tool, arguments, timeout))

    def close(self) -> None:
        """Stop every server and the host's loop (from any thread; waits a few seconds)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._stop_all(), loop)
        try:
            future.result(STOP_TIMEOUT)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError) as exc:
            log.warning("MCP servers not all stopped: %r", exc)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(STOP_TIMEOUT)
        if not thread.is_alive():
            loop.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # -- on the host's loop ------------------------------------------------------------------

    def _host_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                _load_sdk()
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="agent-lsp mcp", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _on_host(self, work: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(work, self._host_loop())
        return await asyncio.wrap_future(future)

    async def _linked(self, name: str) -> _Link:
        spec = self.specs.get(name)
        if spec is None:
            known = ", ".join(self.specs) or "none"
            raise McpServerError(f"no MCP server {name!r} (configured: {known})")
        link = self._links.get(name)
        if link is None or (link.ready.is_set() and link.tools is not None and link.client is None):
            link = self._links[name] = _Link(spec, self.shell_for(spec))  # new, or restarted
            link.runner = asyncio.create_task(self._serve(link))
        try:
            await asyncio.wait_for(link.ready.wait(), self.start_timeout)
        except TimeoutError:
            link.error = (
                f"MCP server {name} did not start within {self.start_timeout:.0f} s "
                f"({' '.join(spec.command)[:200]})"
            )
            link.stop.set()
            link.ready.set()
            if link.runner is not None:
                link.runner.cancel()
        return link

    async def _listed(self, name: str) -> _Link:
        link = await self._linked(name)
        if link.stale and link.client is not None:
            link.stale = False
            skipped: list[str] = []
            try:
                link.tools = await asyncio.wait_for(
                    _list_tools(link.client, skipped), self.start_timeout
                )
            except TimeoutError:  # it said they changed and will not say what: the old list
                self._tell(name, "failed", f"no new tool list within {self.start_timeout:.0f} s")
                return link
            except Exception as exc:  # the server broke: its old list stands, said why
                self._tell(name, "failed", f"its tools could not be listed again: {_one_line(exc)}")
                return link
            link.skipped = skipped
            self._tell(name, "tools changed", ", ".join(t.name for t in link.tools)[:300])
            if len(link.tools) >= MAX_TOOLS:
                self._tell(name, "capped", f"only its first {MAX_TOOLS} tools are offered")
        return link

    async def _serve(self, link: _Link) -> None:
        """Start the server, list its tools, hold the connection until told to stop."""
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.types import Implementation, ToolListChangedNotification

        async def heard(message: object) -> None:
            if isinstance(message, ToolListChangedNotification):
                link.stale = True  # listed again when the tools are next asked for

        spec = link.spec
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        cwd = Path(tempfile.mkdtemp(prefix="agent-lsp-mcp-"))  # empty: nothing to import there
        try:
            path = server_path({**os.environ, **spec.env}.get("PATH", os.defpath), self.root)
            command = server_program(spec.command, self.root, path)
            readable = (*spec.readable, *program_folders(command, link.shell.sandbox.home))
            link.secrets = await asyncio.to_thread(link.shell.secrets_now)  # before the scan
            argv, env, link.masks = await asyncio.to_thread(
                link.shell.server_argv, command, cwd, {**spec.env, "PATH": path}, readable
            )
            link.before = await asyncio.to_thread(link.shell.protected_now)  # before it runs
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
            info = Implementation(name="agent-lsp", version=__version__)
            async with Client(
                stdio_client(params, errlog=errlog), client_info=info, message_handler=heard
            ) as client:
                link.tools = await _list_tools(client, link.skipped)
                if len(link.tools) >= MAX_TOOLS:
                    self._tell(spec.name, "capped", f"only its first {MAX_TOOLS} tools are offered")
                listening = asyncio.create_task(_listen(client, link))
                if link.skipped:
                    self._tell(spec.name, "skipped", skipped_note(link.skipped))
                link.client = client
                link.ready.set()
                self._tell(spec.name, "started", self._how(link))
                try:
                    await link.stop.wait()
                finally:
                    listening.cancel()
        except SandboxError as exc:
            link.error = f"MCP server {spec.name} not started: {exc}"
        except McpServerError as exc:  # its program: not found, or the repository's
            link.error = f"MCP server {spec.name} did not start: {exc}"
        except asyncio.CancelledError:
            link.error = link.error or f"MCP server {spec.name}: stopped"
        except Exception as exc:
            said = _tail(errlog)
            where = "ended" if link.tools is not None else "did not start"
            link.error = f"MCP server {spec.name} {where}: {_one_line(exc)}" + (
                f" ({said})" if said else ""
            )
        finally:
            errlog.close()
            shutil.rmtree(cwd, ignore_errors=True)
            link.client = None
            self._ended(link)
            if link.error is not None:
                self._tell(spec.name, "failed", link.error)
            link.ready.set()

    def _ended(self, link: _Link) -> None:
        """The server has ended: what it made of the protected names since it started (at its
        start, after a call returned) is removed, and its masks too, unless another server
        still runs in the workspace (it sees them; `_stop_all` removes them last)."""
        note = link.shell.tidy(link.before, link.masks) if link.before else ""
        if note:
            self._tell(link.spec.name, "tidied", note)
        alive = [
            other
            for other in self._links.values()
            if other is not link and other.runner is not None and not other.runner.done()
        ]
        if not alive:
            link.shell.remove_masks(link.masks)

    async def _tidy_running(self) -> None:
        """What the running servers made of the protected names since they started, removed
        (at each task's start: a server may write between calls)."""
        for link in list(self._links.values()):
            if link.client is not None and link.before:
                note = await asyncio.to_thread(link.shell.tidy, link.before, link.masks)
                if note:
                    self._tell(link.spec.name, "tidied", note)

    def _how(self, link: _Link) -> str:
        tools = len(link.tools or [])
        if not link.shell.sandboxed:
            why = link.shell.sandbox.status().reason
            return f"{tools} tools; runs without an OS sandbox ({why}), with your permissions"
        net = "with the network" if link.spec.network else "no network"
        return f"{tools} tools; in the sandbox, {net}"

    async def _call(
        self,
        name: str,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,  # noqa: ASYNC109 - the call's own limit, said in its error
    ) -> McpResult:
        link = await self._linked(name)
        restarted = ""
        if link.client is not None and not await self._secrets_kept(link):
            link = await self._restart(link)
            restarted = "restarted the server first: the workspace's secret files changed"
        client = link.client
        if client is None:
            raise McpServerError(link.error or f"MCP server {name} is not running")
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), timeout)
        except TimeoutError:
            raise McpServerError(
                f"MCP server {name}: {tool} gave no answer within {timeout:.0f} s"
            ) from None
        except Exception as exc:
            if link.runner is None or link.runner.done():
                link.client = None  # it ended: started again at the next call
            raise McpServerError(f"MCP server {name}: {tool} failed: {_one_line(exc)}") from None
        finally:  # made since the server started (at its start, after an earlier call …)
            note = (
                await asyncio.to_thread(link.shell.tidy, link.before, link.masks)
                if link.before
                else ""
            )
        is_error = bool(getattr(result, "is_error", False))
        return McpResult(result_text(result), is_error, note, restarted)

    async def _secrets_kept(self, link: _Link) -> bool:
        """Whether the secret files hidden from the server at its start are the ones there
        now: one replaced since (an editor's atomic save) or added (`.env.local`) is not
        hidden from it."""
        now = await asyncio.to_thread(link.shell.secrets_now)
        return now is not None and now == link.secrets

    async def _restart(self, link: _Link) -> _Link:
        """Stop the server and start it again (its sandbox hides the secret files as they are
        now)."""
        link.stop.set()
        if link.runner is not None:
            await asyncio.wait([link.runner], timeout=STOP_TIMEOUT - 2)
            if not link.runner.done():
                link.runner.cancel()
                await asyncio.wait([link.runner], timeout=2)
        self._tell(link.spec.name, "restarted", "the workspace's secret files changed")
        return await self._linked(link.spec.name)

    async def _stop_all(self) -> None:
        links = list(self._links.values())
        self._links = {}
        for link in links:
            link.stop.set()
        runners = [link.runner for link in links if link.runner is not None]
        if runners:
            await asyncio.wait(runners, timeout=STOP_TIMEOUT - 2)
        for link in links:  # every server has ended: no mask is needed any more
            link.shell.remove_masks(link.masks)
        await asyncio.get_running_loop().shutdown_default_executor()
        for link in links:
            if link.tools is not None and link.error is None:
                self._tell(link.spec.name, "stopped", "")

    def _tell(self, server: str, event: str, detail: str) -> None:
        if self.on_event is not None:
            try:
                self.on_event(server, event, detail)
            except Exception as exc:  # the log never stops a server
                log.warning("MCP event not recorded: %s", exc)


# What the SDK imports only once a server starts.
_SDK_MODULES = (
    "mcp.client.stdio",
    "mcp.os.posix.utilities",
    "anyio._core._subprocesses",
    "anyio._backends._asyncio",
)


def _load_sdk() -> None:
    """Import the SDK, and what it imports only once a server starts, in the calling thread
    before the host's thread runs: on Python 3.11 two threads compiling at once (an import
    that compiles, as a test runner's rewriting of a plugin's modules does) corrupt the
    interpreter's shared AST state."""
    for name in _SDK_MODULES:
        importlib.import_module(name)


async def _listen(client: Any, link: _Link) -> None:
    """A server of the 2026-07-28 protocol says its tools changed on a `subscriptions/listen`
    stream (an older one by a notification, `heard` in `_serve`): the next listing asks again.
    A server that cannot listen, or a stream that ends, leaves the tools as listed."""
    if str(getattr(client, "protocol_version", "") or "") < "2026-07-28":
        return
    with contextlib.suppress(Exception):
        async with client.listen(tools_list_changed=True) as changes:
            async for _ in changes:
                link.stale = True


async def _list_tools(client: Any, skipped: list[str]) -> list[McpToolInfo]:
    """The server's tools whose names are `TOOL_NAME`; the others' names go to `skipped`."""
    tools: list[McpToolInfo] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            if len(tools) >= MAX_TOOLS:
                continue  # said by the caller: only the first MAX_TOOLS are kept
            if not TOOL_NAME.fullmatch(str(tool.name)):
                skipped.append(str(tool.name))
                continue
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
            tools.append(McpToolInfo(str(tool.name), str(tool.description or ""), schema))
        cursor = page.next_cursor
        if not cursor:
            break
    return tools
