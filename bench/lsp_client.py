"""A minimal asyncio LSP client for the benchmarks, and the /proc helpers they measure with.

`LspClient` talks to one language-server child over stdio (Content-Length framing); every wait has
a timeout. Each child runs in a session (process group) of its own, so `kill()` also ends what it
spawned (Copilot's native binary, the server that proxy mode wraps, pytest runs). `Reaper` keeps
every child of a run, so that a run that fails or is interrupted still leaves nothing behind.
Linux only (`/proc`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Json = dict[str, Any]
STREAM_LIMIT = 64 * 1024 * 1024
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ServerError(RuntimeError):
    """The server died, answered with an error, or did not answer in time."""


@dataclass
class Response:
    result: Any
    error: Json | None
    sent_ns: int
    received_ns: int

    @property
    def elapsed_ms(self) -> float:
        return (self.received_ns - self.sent_ns) / 1e6


class Reaper:
    """Every process group a run started; `kill_all()` ends those still alive (idempotent)."""

    def __init__(self) -> None:
        self.groups: dict[int, str] = {}

    def add(self, pid: int, name: str) -> None:
        self.groups[pid] = name

    def discard(self, pid: int) -> None:
        self.groups.pop(pid, None)

    def kill_all(self) -> list[str]:
        killed = []
        for pgid, name in list(self.groups.items()):
            if kill_group(pgid):
                killed.append(name)
        self.groups.clear()
        return killed


REAPER = Reaper()


def kill_group(pgid: int) -> bool:
    """SIGKILL a whole process group; False if it was already gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@dataclass
class LspClient:
    """One language-server child process and a minimal LSP client talking to it over stdio."""

    name: str
    proc: asyncio.subprocess.Process
    spawned_ns: int
    pending: dict[int, asyncio.Future[tuple[Json, int]]] = field(default_factory=dict)
    notifications: dict[str, int] = field(default_factory=dict)
    shown: list[str] = field(default_factory=list)  # window/showMessage texts
    stderr_tail: bytearray = field(default_factory=bytearray)
    next_id: int = 1
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    dead: str | None = None
    _event: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    async def spawn(
        cls, name: str, argv: Sequence[str], env: dict[str, str], cwd: Path
    ) -> LspClient:
        spawned_ns = time.perf_counter_ns()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            limit=STREAM_LIMIT,
            start_new_session=True,  # own process group: kill() reaches its children too
        )
        REAPER.add(proc.pid, name)
        client = cls(name, proc, spawned_ns)
        client.tasks = [
            asyncio.create_task(client._read_messages()),
            asyncio.create_task(client._drain_stderr()),
        ]
        return client

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _write(self, message: Json) -> None:
        if self.dead is not None or self.proc.stdin is None or self.proc.stdin.is_closing():
            raise ServerError(f"{self.name}: cannot write, server is gone ({self.dead})")
        body = json.dumps(message, separators=(",", ":")).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def request(
        self, method: str, params: Any, timeout: float = 10.0, check: bool = True
    ) -> Response:
        """Send a request and wait for its response; `received_ns` is taken when it was read.

        An error response raises `ServerError` unless `check` is false."""
        request_id = self.next_id
        self.next_id += 1
        future: asyncio.Future[tuple[Json, int]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        sent_ns = time.perf_counter_ns()
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            message, received_ns = await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise ServerError(
                f"{self.name}: no response to {method} within {timeout} s{self._stderr_hint()}"
            ) from None
        finally:
            self.pending.pop(request_id, None)
        error = message.get("error")
        if error is not None and check:
            raise ServerError(f"{self.name}: {method} failed: {error}")
        return Response(message.get("result"), error, sent_ns, received_ns)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait until the pipe to the server has room again (after many `notify` calls)."""
        stdin = self.proc.stdin
        if stdin is None:
            return
        try:
            await asyncio.wait_for(stdin.drain(), timeout)
        except TimeoutError:
            raise ServerError(f"{self.name}: stopped reading its input for {timeout} s") from None
        except ConnectionError as exc:
            raise ServerError(f"{self.name}: input closed ({exc!r}){self._stderr_hint()}") from None

    async def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> None:
        """Wait until `count` notifications `method` have arrived in all."""
        deadline = time.monotonic() + timeout
        while self.notifications.get(method, 0) < count:
            left = deadline - time.monotonic()
            if left <= 0 or self.dead is not None:
                raise ServerError(f"{self.name}: no {method} within {timeout} s ({self.dead})")
            self._event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), left)

    async def wait_shown(self, needle: str, timeout: float = 10.0) -> str:
        """Wait for a window/showMessage containing `needle`; returns its text."""
        deadline = time.monotonic() + timeout
        while True:
            for text in self.shown:
                if needle in text:
                    return text
            left = deadline - time.monotonic()
            if left <= 0 or self.dead is not None:
                raise ServerError(f"{self.name}: no message with {needle!r} within {timeout} s")
            self._event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), left)

    async def _read_messages(self) -> None:
        reader = self.proc.stdout
        assert reader is not None
        try:
            while True:
                header = await reader.readuntil(b"\r\n\r\n")
                length = _content_length(header)
                body = await reader.readexactly(length)
                received_ns = time.perf_counter_ns()
                self._dispatch(json.loads(body), received_ns)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            self._die(f"stdout closed ({type(exc).__name__})")
        except Exception as exc:
            self._die(f"protocol error: {exc!r}")
            raise

    def _dispatch(self, message: Json, received_ns: int) -> None:
        method = message.get("method")
        if method is None:  # a response to one of our requests
            future = self.pending.get(message.get("id", -1))
            if future is not None and not future.done():
                future.set_result((message, received_ns))
            return
        if "id" in message:  # a request from the server: answer like an agreeable editor
            with contextlib.suppress(ServerError):
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": _reply_to(message)})
            return
        self.notifications[method] = self.notifications.get(method, 0) + 1
        if method == "window/showMessage":
            self.shown.append(str((message.get("params") or {}).get("message", "")))
        self._event.set()

    async def _drain_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while chunk := await stream.read(65536):
            self.stderr_tail += chunk
            del self.stderr_tail[:-8192]

    def _die(self, reason: str) -> None:
        self.dead = reason
        self._event.set()
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ServerError(f"{self.name}: {reason}{self._stderr_hint()}"))

    def _stderr_hint(self) -> str:
        text = self.stderr_tail.decode(errors="replace").strip()
        return f"\n--- {self.name} stderr (tail) ---\n{text[-2000:]}" if text else ""

    async def shutdown(self, timeout: float = 5.0) -> None:
        """Polite LSP shutdown + exit; the whole process group is killed after that anyway."""
        with contextlib.suppress(ServerError, OSError):
            await self.request("shutdown", None, timeout, check=False)
            self.notify("exit", None)
        await self.kill(grace=timeout)

    async def kill(self, grace: float = 0.0) -> None:
        if self.proc.returncode is None and grace > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), grace)
        kill_group(self.proc.pid)  # the server's children (and the server, if still there)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), 5.0)
        REAPER.discard(self.proc.pid)
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _content_length(header: bytes) -> int:
    for line in header.decode("ascii", errors="replace").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return int(value.strip())
    raise ServerError(f"no Content-Length in header {header!r}")


def _reply_to(request: Json) -> Any:
    """workspace/configuration: nothing configured; everything else (progress tokens,
    showMessageRequest, applyEdit...): null, i.e. "no answer" / "not applied"."""
    if request.get("method") == "workspace/configuration":
        items = (request.get("params") or {}).get("items") or []
        return [None for _ in items]
    return None


# --------------------------------------------------------------------------- /proc


def _stat_fields(pid: int) -> list[str]:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        raise ServerError(f"pid {pid} exited") from None
    return stat.rpartition(")")[2].split()


def cpu_ticks(pid: int, children: bool = False) -> int:
    """utime + stime of a live process (plus its waited-for children's), in clock ticks."""
    fields = _stat_fields(pid)
    ticks = int(fields[11]) + int(fields[12])
    return ticks + (int(fields[13]) + int(fields[14]) if children else 0)


def descendants(pid: int) -> list[int]:
    """Live processes below `pid` (any depth), from the ppid field of /proc/*/stat."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(ServerError, IndexError, ValueError):
                parent[int(entry.name)] = int(_stat_fields(int(entry.name))[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        current = frontier.pop()
        kids = [child for child, ppid in parent.items() if ppid == current]
        found += kids
        frontier += kids
    return found


def vm_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM / RssAnon / RssFile of a live process, in KiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        raise ServerError(f"pid {pid} exited") from None
    values: dict[str, int] = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            values[key] = int(value.split()[0])
    return values


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def tree_memory(pid: int) -> Json:
    """VmRSS of a process and of everything below it (KiB), summed and per process."""
    processes = []
    for member in [pid, *descendants(pid)]:
        with contextlib.suppress(ServerError):
            processes.append({"pid": member, "name": process_name(member), **vm_status(member)})
    return {
        "VmRSS": sum(p.get("VmRSS", 0) for p in processes),
        "VmHWM": sum(p.get("VmHWM", 0) for p in processes),
        "processes": processes,
    }


def tree_cpu_ticks(pid: int) -> int:
    total = 0
    for member in [pid, *descendants(pid)]:
        with contextlib.suppress(ServerError):
            total += cpu_ticks(member)
    return total


async def wait_quiet(pid: int, timeout: float, quiet_polls: int = 4, strict: bool = True) -> bool:
    """Wait until the process tree has used no CPU for `quiet_polls` x 50 ms (it is booted).

    False if it is still busy after `timeout` (an error if `strict`)."""
    deadline = time.monotonic() + timeout
    last, quiet = tree_cpu_ticks(pid), 0
    while quiet < quiet_polls:
        if time.monotonic() > deadline:
            if strict:
                raise ServerError(f"pid {pid} still busy after {timeout} s")
            return False
        await asyncio.sleep(0.05)
        now = tree_cpu_ticks(pid)
        quiet = quiet + 1 if now == last else 0
        last = now
    return True
