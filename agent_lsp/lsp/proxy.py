"""Proxy mode: `agent-lsp serve --wrap -- <real server>`.

agent-lsp sits between the editor and the user's real language server. Messages pass through
byte for byte, except where the two servers must look like one: the `initialize` answer (the
agent's commands are added to the capabilities), `textDocument/codeAction` answers (the agent's
actions are appended), and `publishDiagnostics` (each file's diagnostics are the union of both
servers'). The agent runs in-process as an ordinary pygls server behind an in-memory transport;
its requests to the editor get ids of their own so answers find their way back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from agent_lsp.lsp.convert import resolved_path
from agent_lsp.lsp.framing import read_message, write_message
from agent_lsp.lsp.server import AgentLanguageServer
from agent_lsp.lsp.wrapped_check import WrappedCheck, WrappedServer

log = logging.getLogger(__name__)

MERGED = "agent-lsp/merged/"  # id prefix of editor requests both servers answer
AGENT = "agent-lsp/agent/"  # id prefix of the agent's own requests to the editor
BOTH = frozenset({"initialize", "shutdown", "textDocument/codeAction"})
Json = dict[str, Any]


@dataclass
class _Merge:
    method: str
    parts: dict[str, Json] = field(default_factory=dict[str, Json])


class Proxy:
    def __init__(self, agent: AgentLanguageServer, command: Sequence[str]) -> None:
        self.agent = agent
        self.command = list(command)
        self.merges: dict[Any, _Merge] = {}
        self.agent_ids: dict[str, Any] = {}
        self.diagnostics: dict[str, dict[str, Json]] = {}  # uri -> {"real"|"agent": params}
        self._out: asyncio.StreamWriter | None = None
        self._real: asyncio.subprocess.Process | None = None
        self.wrapped = WrappedServer(lambda m: self._to_real(_dump(m)), Path(self.command[0]).name)
        # the agent's sessions ask the wrapped server again about a fix's diagnostic
        agent.diagnostic_check = WrappedCheck(self.wrapped, self._document)

    # -- plumbing -------------------------------------------------------------------------
    async def run(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        self._out = writer
        self.wrapped.loop = asyncio.get_running_loop()
        try:
            self._real = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
        except OSError as exc:  # found by `which`, yet not startable (a bad interpreter line)
            print(f"agent-lsp: cannot start {self.command[0]}: {exc.strerror}", file=sys.stderr)
            return EXIT_NO_SERVER
        self.agent.protocol.set_writer(_AgentWriter(self), include_headers=False)
        real_out = self._real.stdout
        assert real_out is not None
        pump = asyncio.create_task(self._pump_real(real_out))
        try:
            while (raw := await read_message(reader)) is not None:
                if not self._from_editor(raw):
                    break
        finally:
            await self._stop_real()
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        return 0

    async def _pump_real(self, stream: asyncio.StreamReader) -> None:
        while (raw := await read_message(stream)) is not None:
            self._from_real(raw)
        log.warning("the wrapped server closed its output")

    async def _stop_real(self) -> None:
        real = self._real
        if real is None or real.returncode is not None:
            return
        try:
            await asyncio.wait_for(real.wait(), 3)
        except TimeoutError:
            real.kill()
            await real.wait()

    def _to_editor(self, raw: bytes) -> None:
        if self._out is not None:
            write_message(self._out, raw)

    def _to_real(self, raw: bytes) -> None:
        real = self._real
        if real is not None and real.stdin is not None and not real.stdin.is_closing():
            write_message(real.stdin, raw)

    def _to_agent(self, message: Json) -> None:
        protocol = self.agent.protocol
        try:
            parsed = json.loads(json.dumps(message), object_hook=protocol.structure_message)
            protocol.handle_message(parsed)
        except Exception:  # a message the agent cannot read must not stop the proxy
            log.exception("agent could not handle %s", message.get("method", "a response"))

    # -- routing --------------------------------------------------------------------------
    def _from_editor(self, raw: bytes) -> bool:
        message = _parse(raw)
        if message is None:
            self._to_real(raw)
            return True
        method, msg_id = message.get("method"), message.get("id")
        if method is None:  # the editor answers a request
            if isinstance(msg_id, str) and msg_id in self.agent_ids:
                self._to_agent({**message, "id": self.agent_ids.pop(msg_id)})
            else:
                self._to_real(raw)
        elif method == "exit":
            self._to_real(raw)
            return False
        elif method == "textDocument/diagnostic" and msg_id is not None:
            self.wrapped.editor_pulls(msg_id)
            self._to_real(raw)
        elif method in BOTH and msg_id is not None:
            self.merges[msg_id] = _Merge(method)
            self._to_real(raw)
            self._to_agent({**message, "id": f"{MERGED}{json.dumps(msg_id)}"})
        elif method == "workspace/executeCommand" and _is_agent_command(message):
            self._to_agent(message)
        elif msg_id is not None:  # any other request belongs to the real server
            self._to_real(raw)
        else:  # notifications (document sync, configuration, cancel) go to both
            self._to_real(raw)
            self._to_agent(message)
        return True

    def _from_real(self, raw: bytes) -> None:
        message = _parse(raw)
        if message is None:
            self._to_editor(raw)
            return
        msg_id, method = message.get("id"), message.get("method")
        if method is None and self.wrapped.answered(message):
            return
        if method is None and msg_id in self.merges:
            self._merge_part(msg_id, "real", message)
        elif method == "textDocument/publishDiagnostics":
            self._publish("real", message)
        else:
            self._to_editor(raw)

    def from_agent(self, raw: bytes) -> None:
        message = _parse(raw)
        if message is None:
            return
        msg_id, method = message.get("id"), message.get("method")
        if method is None and isinstance(msg_id, str) and msg_id.startswith(MERGED):
            self._merge_part(json.loads(msg_id[len(MERGED) :]), "agent", message)
        elif method == "textDocument/publishDiagnostics":
            self._publish("agent", message)
        elif method is not None and msg_id is not None:  # the agent asks the editor
            proxy_id = f"{AGENT}{msg_id}"
            self.agent_ids[proxy_id] = msg_id
            self._to_editor(_dump({**message, "id": proxy_id}))
        else:
            self._to_editor(raw)

    # -- merging --------------------------------------------------------------------------
    def _merge_part(self, msg_id: Any, side: str, message: Json) -> None:
        merge = self.merges.get(msg_id)
        if merge is None:
            return
        merge.parts[side] = message
        if len(merge.parts) < 2:
            return
        del self.merges[msg_id]
        real, agent = merge.parts["real"], merge.parts["agent"]
        if merge.method == "initialize":
            self.wrapped.initialized(real.get("result"))
        if "error" in real or "error" in agent:
            self._to_editor(_dump({**real, "id": msg_id}))
            return
        result = _combine(merge.method, real.get("result"), agent.get("result"))
        self._to_editor(_dump({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    def _publish(self, side: str, message: Json) -> None:
        params = message.get("params") or {}
        uri = str(params.get("uri", ""))
        sides = self.diagnostics.setdefault(uri, {})
        sides[side] = params
        if side == "real":
            self.wrapped.publish(params)
            self._remember_real(uri, params.get("diagnostics") or [])
        union = [d for s in ("real", "agent") for d in (sides.get(s) or {}).get("diagnostics", [])]
        merged = {"uri": uri, "diagnostics": union}
        version = (sides.get("real") or {}).get("version")
        if version is not None:
            merged["version"] = version
        self._to_editor(
            _dump({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": merged})
        )

    def _remember_real(self, uri: str, diagnostics: list[Json]) -> None:
        """The real server's diagnostics are what the agent perceives (get_diagnostics)."""
        converter = self.agent.protocol._converter  # pyright: ignore[reportPrivateUsage]
        try:
            parsed = [converter.structure(d, t.Diagnostic) for d in diagnostics]
        except Exception:
            log.debug("unreadable diagnostics from the wrapped server for %s", uri)
            return
        self.agent.note_editor_diagnostics(uri, parsed)

    def _document(self, path: Path) -> tuple[str, str, int | None] | None:
        """The editor's buffer of `path` as forwarded to both servers: (uri, text, version)."""
        wanted = path.resolve()
        for uri, doc in self.agent.workspace.text_documents.items():
            if resolved_path(uri) == wanted:
                return uri, doc.source, doc.version
        return None


class _AgentWriter:
    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    def write(self, data: bytes) -> None:
        self.proxy.from_agent(data)

    def close(self) -> None:
        """Nothing to close: the proxy owns the real streams."""


def _combine(method: str, real: Any, agent: Any) -> Any:
    if method == "textDocument/codeAction":
        return [*(real or []), *(agent or [])] or None
    if method == "initialize" and isinstance(real, dict) and isinstance(agent, dict):
        return _merge_initialize(real, agent)
    return real


def _merge_initialize(real: Json, agent: Json) -> Json:
    caps = dict(real.get("capabilities") or {})
    ours = agent.get("capabilities") or {}
    theirs = (caps.get("executeCommandProvider") or {}).get("commands", [])
    commands = [*theirs, *ours.get("executeCommandProvider", {}).get("commands", [])]
    caps["executeCommandProvider"] = {"commands": commands}
    if not caps.get("codeActionProvider"):
        caps["codeActionProvider"] = ours.get("codeActionProvider", True)
    if not caps.get("textDocumentSync"):
        caps["textDocumentSync"] = ours.get("textDocumentSync")
    return {**real, "capabilities": caps}


def _is_agent_command(message: Json) -> bool:
    command = (message.get("params") or {}).get("command", "")
    return isinstance(command, str) and command.startswith("agentLsp.")


def _parse(raw: bytes) -> Json | None:
    try:
        message = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return message if isinstance(message, dict) else None


def _dump(message: Json) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


# What to install for the servers the guides name (the rest: the program's own docs).
INSTALL_HINTS = {
    "pylsp": "pip install python-lsp-server",
    "pyright-langserver": "npm install -g pyright",
    "basedpyright-langserver": "pip install basedpyright",
    "ruff": "pip install ruff",
    "typescript-language-server": "npm install -g typescript-language-server typescript",
    "gopls": "go install golang.org/x/tools/gopls@latest",
    "rust-analyzer": "rustup component add rust-analyzer",
    "clangd": "apt install clangd (or your system's package)",
}
EXIT_NO_SERVER = 2


def missing_program(command: Sequence[str]) -> str | None:
    """Why `command` cannot start (one line: the program, what to install), or None."""
    program = command[0]
    if shutil.which(program) is not None:
        return None
    name = Path(program).name
    if os.sep in program or (os.altsep and os.altsep in program):
        problem = "is not executable" if Path(program).exists() else "does not exist"
        return f"agent-lsp: the language server to wrap, {program}, {problem}"
    hint = INSTALL_HINTS.get(name)
    todo = f"install it ({hint})" if hint else "install it"
    return (
        f"agent-lsp: the language server to wrap, {program}, is not on PATH: {todo}, or give "
        "its full path after --wrap --"
    )


async def serve_proxy(agent: AgentLanguageServer, command: Sequence[str]) -> int:
    """Run the proxy on this process' stdin/stdout; a server that cannot start is one line on
    stderr and a non-zero exit, before anything is read."""
    problem = missing_program(command)
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_NO_SERVER
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout.buffer
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return await Proxy(agent, command).run(reader, writer)
