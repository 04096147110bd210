"""Proxy mode: the wrapped server re-checks the diagnostic a fix started from.

`WrappedServer` is what the proxy learns of the real server (its name, whether it offers pull
diagnostics, the sources it reports, its latest `publishDiagnostics` per file) and how to ask
it something. `WrappedCheck` is the `DiagnosticCheck` the agent's sessions use: once the fix is
in the editor's buffer (so the editor's didChange has gone to the real server too), it asks
`textDocument/diagnostic` where the server offers pull diagnostics; otherwise it takes a
`publishDiagnostics` newer than that buffer (by version, or published after a didSave it sends
to make the server lint again), within a bounded wait. The diagnostic is matched by source,
code and message (the fix may move it to another line).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_lsp.errors import AgentLspError

if TYPE_CHECKING:  # the proxy starts before the agent loads: its modules come with it
    from agent_lsp.loop.done import Recheck
    from agent_lsp.project.workspace import Workspace
    from agent_lsp.task import DiagnosticInfo, Task

Json = dict[str, Any]
OWN_ID = "agent-lsp/check/"  # id prefix of the proxy's own requests to the wrapped server
WAIT = 20.0  # seconds the wrapped server gets to answer (a hang guard, not a timing)
BUFFER_GRACE = 2.0  # seconds for the fix to be in the editor's buffer
POLL = 0.05


@dataclass
class _Published:
    seq: int  # the order it arrived in
    params: Json


class WrappedServer:
    """The real server behind the proxy, as seen on the proxy's loop."""

    def __init__(self, send: Callable[[Json], None], name: str) -> None:
        self.send = send
        self.name = name
        self.pull = False
        self.sources: set[str | None] = set()
        self.published: dict[str, _Published] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._seq = itertools.count(1)
        self._ids = itertools.count(1)
        self._requests: dict[str, asyncio.Future[Json]] = {}
        self._pulls: set[str] = set()  # the editor's pull requests (ids), to learn sources

    def initialized(self, result: Any) -> None:
        if not isinstance(result, dict):
            return
        info = result.get("serverInfo") or {}
        if isinstance(info, dict) and info.get("name"):
            self.name = str(info["name"])
        capabilities = result.get("capabilities") or {}
        self.pull = isinstance(capabilities, dict) and bool(capabilities.get("diagnosticProvider"))

    def publish(self, params: Json) -> None:
        self._learn(params.get("diagnostics"))
        self.published[str(params.get("uri", ""))] = _Published(next(self._seq), params)

    def editor_pulls(self, msg_id: Any) -> None:
        self._pulls.add(repr(msg_id))

    def answered(self, message: Json) -> bool:
        """Takes the answers to the proxy's own requests (True); notes the sources in the
        answers to the editor's pull requests, which still go on to the editor (False)."""
        msg_id = message.get("id")
        future = self._requests.pop(msg_id, None) if isinstance(msg_id, str) else None
        if future is not None:
            if not future.done():
                future.set_result(message)
            return True
        if repr(msg_id) in self._pulls:
            self._pulls.discard(repr(msg_id))
            result = message.get("result")
            if isinstance(result, dict):
                self._learn(result.get("items"))  # pyright: ignore[reportUnknownMemberType]
        return False

    def _learn(self, diagnostics: Any) -> None:
        if isinstance(diagnostics, list):
            for d in diagnostics:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(d, dict):
                    self.sources.add(d.get("source"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]

    async def request(self, method: str, params: Json, within: float) -> Json:
        msg_id = f"{OWN_ID}{next(self._ids)}"
        future: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._requests[msg_id] = future
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await asyncio.wait_for(future, within)
        finally:
            self._requests.pop(msg_id, None)

    async def fresh_publish(self, uri: str, version: int | None, within: float) -> Json:
        """A publishDiagnostics for `uri` of the buffer's `version` or newer; without a
        version, one published after the didSave sent here (TimeoutError when none comes)."""
        latest = self.published.get(uri)
        if latest is not None and _newer(latest.params, version):
            return latest.params
        after = latest.seq if latest is not None else 0
        self.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didSave",
                "params": {"textDocument": {"uri": uri}},
            }
        )
        async with asyncio.timeout(within):
            while True:
                latest = self.published.get(uri)
                params = latest.params if latest is not None and latest.seq > after else None
                if params is not None and ("version" not in params or _newer(params, version)):
                    return params
                await asyncio.sleep(POLL)


def _newer(params: Json, version: int | None) -> bool:
    published = params.get("version")
    return isinstance(published, int) and version is not None and published >= version


class WrappedCheck:
    """Asks the wrapped server again about a fix task's diagnostic (see the module doc)."""

    def __init__(
        self,
        server: WrappedServer,
        document: Callable[[Path], tuple[str, str, int | None] | None],
        timeout: float = WAIT,
    ) -> None:
        """`document(path)`: the editor's buffer of `path` as the proxy forwarded it — (uri,
        text, version) — or None when the editor does not have it open."""
        self.server = server
        self.document = document
        self.timeout = timeout

    async def recheck(self, task: Task, workspace: Workspace) -> Recheck | None:
        from agent_lsp.loop.done import Recheck, describe

        diagnostic, loop = task.diagnostic, self.server.loop
        if diagnostic is None or task.path is None or loop is None:
            return None
        if diagnostic.source not in self.server.sources:
            return None  # not the wrapped server's: another source (or nobody) is asked
        try:
            path = workspace.resolve(task.path)
            expected = workspace.read_text(path)
        except AgentLspError as exc:
            return self._unchecked(diagnostic, task, str(exc))
        job = self._ask(path, expected, diagnostic)
        if asyncio.get_running_loop() is loop:
            state, said = await job
        else:
            state, said = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(job, loop))
        what = describe(diagnostic, task.path)
        name = self.server.name
        if state == "gone":
            return Recheck("gone", f"{what} gone (re-checked by {name})")
        if state == "present":
            return Recheck("present", f"{what} still there ({name} reports it at line {said})")
        return self._unchecked(diagnostic, task, said)

    def _unchecked(self, diagnostic: DiagnosticInfo, task: Task, reason: str) -> Recheck:
        from agent_lsp.loop.done import Recheck, describe

        what = describe(diagnostic, task.path)
        return Recheck("unchecked", f"{what} could not be re-checked ({reason})")

    async def _ask(self, path: Path, expected: str, diagnostic: DiagnosticInfo) -> tuple[str, str]:
        """On the proxy's loop: ("gone"|"present"|"unchecked", the line or the reason)."""
        name, loop = self.server.name, asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        # The channel waited for the editor's didChange of every applied edit, so a fix that
        # landed is in the buffer already; one that is not after a short grace is a proposal
        # (review mode, a background suggestion) the editor does not hold yet.
        in_buffer_by = loop.time() + min(BUFFER_GRACE, self.timeout)
        while (doc := self.document(path)) is None or doc[1] != expected:
            if loop.time() > in_buffer_by:
                where = "is not open in the editor" if doc is None else "is not in its buffer"
                return "unchecked", f"the fix {where}, so {name} has not seen it"
            await asyncio.sleep(POLL)  # the editor's didChange of the fix is on its way
        uri, _, version = doc
        left = max(deadline - loop.time(), 1.0)
        try:
            if self.server.pull:
                answer = await self.server.request(
                    "textDocument/diagnostic", {"textDocument": {"uri": uri}}, left
                )
                result: Any = answer.get("result")
                if not isinstance(result, dict) or "error" in answer:
                    return "unchecked", f"{name} did not report diagnostics: {answer.get('error')}"
                items: Any = result.get("items")  # pyright: ignore[reportUnknownMemberType]
            else:
                items = (await self.server.fresh_publish(uri, version, left)).get("diagnostics")
        except TimeoutError:
            how = "textDocument/diagnostic" if self.server.pull else "publishDiagnostics"
            return "unchecked", f"no {how} from {name} within {self.timeout:g} s"
        lines = _same(diagnostic, items if isinstance(items, list) else [])  # pyright: ignore[reportUnknownArgumentType]
        if not lines:
            return "gone", ""
        nearest = min(lines, key=lambda line: abs(line - diagnostic.line))
        return "present", str(nearest + 1)


def _same(diagnostic: DiagnosticInfo, items: list[Any]) -> list[int]:
    """The lines of the reported diagnostics with the same source, code and message."""
    lines: list[int] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        d: Json = item  # pyright: ignore[reportUnknownVariableType]
        code = d.get("code")
        if d.get("source") != diagnostic.source or str(d.get("message", "")) != diagnostic.message:
            continue
        if diagnostic.code is not None and (code is None or str(code) != diagnostic.code):
            continue
        start = (d.get("range") or {}).get("start") or {}
        lines.append(int(start.get("line", 0)))
    return lines
