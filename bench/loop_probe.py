"""Run `agent-lsp` with every asyncio callback timed; the slow ones are logged as JSON lines.

Used by `lsp_bench.py --profile` to tell which piece of work held the server's event loop while a
request waited. Each callback (a task step, a `call_soon` handle, a timer) that runs for at least
`LSP_BENCH_STALL_MS` milliseconds (default 3) is appended to the file `LSP_BENCH_STALL_LOG` as
`{"at": s, "ms": ms, "cpu_ms": ms, "thread": name, "what": ..., "from": ..., "to": ...}`, where
`thread` names the loop's thread (`MainThread`: the server's loop; agent tasks run on a loop in a
thread of their own, whose callbacks delay requests only through the GIL), `cpu_ms` is the
CPU time the loop's thread got meanwhile (the rest it waited: for the GIL, held by a worker
thread, or for a CPU, taken by other processes). For a task step, `from` is where its
coroutine chain was suspended before the step and `to` where it is suspended after it (so the
code between the two ran without yielding), innermost frame last.

Run: `LSP_BENCH_STALL_LOG=stalls.jsonl python bench/loop_probe.py serve` (same arguments as
`python -m agent_lsp`). Costs two clock reads per callback; nothing else changes.
"""

from __future__ import annotations

import asyncio
import asyncio.events
import gc
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import CoroutineType
from typing import Any, TextIO

THRESHOLD_S = float(os.environ.get("LSP_BENCH_STALL_MS", "3")) / 1000
T0 = time.perf_counter()


def _short_path(path: str) -> str:
    """Relative to site-packages, the standard library, or the repository."""
    for marker in ("/site-packages/", "/agent_lsp/", "/adapters/"):
        if marker in path:
            head = "" if marker == "/site-packages/" else marker[1:]
            return head + path.rsplit(marker, 1)[1]
    return re.sub(r".*/lib/python3\.\d+/", "", path)


def _chain(coro: Any) -> list[str]:
    """`qualname (file:line)` of each coroutine in the await chain, outermost first."""
    frames: list[str] = []
    while isinstance(coro, CoroutineType):
        frame = coro.cr_frame
        if frame is None:
            break
        frames.append(
            f"{coro.__qualname__} ({_short_path(frame.f_code.co_filename)}:{frame.f_lineno})"
        )
        coro = coro.cr_await
    return frames


def _task_of(callback: Callable[..., Any]) -> asyncio.Task[Any] | None:
    owner = getattr(callback, "__self__", None)
    return owner if isinstance(owner, asyncio.Task) else None


def _describe(callback: Callable[..., Any]) -> str:
    task = _task_of(callback)
    if task is not None:
        coro = task.get_coro()
        return f"task {getattr(coro, '__qualname__', type(coro).__qualname__)}"
    name = getattr(callback, "__qualname__", None) or type(callback).__qualname__
    module = getattr(callback, "__module__", None) or ""
    return f"callback {module}.{name}" if module else f"callback {name}"


def install(log: TextIO) -> None:
    original = asyncio.events.Handle._run

    def timed_run(self: asyncio.events.Handle) -> None:
        callback = self._callback  # pyright: ignore[reportAttributeAccessIssue]
        task = _task_of(callback)
        before = _chain(task.get_coro()) if task is not None else []
        start, start_cpu = time.perf_counter(), time.thread_time()
        original(self)
        took = time.perf_counter() - start
        if took < THRESHOLD_S:
            return
        try:
            entry = {
                "at": round(start - T0, 4),
                "ms": round(took * 1000, 3),
                "cpu_ms": round((time.thread_time() - start_cpu) * 1000, 3),
                "thread": threading.current_thread().name,
                "what": _describe(callback),
                "from": before,
                "to": _chain(task.get_coro()) if task is not None else [],
            }
            log.write(json.dumps(entry) + "\n")
        except Exception as exc:  # the probe must never break the server
            log.write(json.dumps({"at": 0, "ms": took * 1000, "what": f"? ({exc!r})"}) + "\n")

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]


def install_gc_probe(log: TextIO) -> None:
    """Log each garbage collection of `THRESHOLD_S` or more: it stops every thread."""
    started: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started["t"] = time.perf_counter()
            return
        took = time.perf_counter() - started.get("t", time.perf_counter())
        if took >= THRESHOLD_S:
            entry = {
                "at": round(time.perf_counter() - T0, 4),
                "ms": round(took * 1000, 3),
                "gc": info.get("generation", -1),
                "collected": info.get("collected", 0),
                "thread": threading.current_thread().name,
            }
            log.write(json.dumps(entry) + "\n")

    gc.callbacks.append(on_gc)


def main() -> int:
    path = os.environ.get("LSP_BENCH_STALL_LOG")
    if not path:
        print("loop_probe: set LSP_BENCH_STALL_LOG to the log file", file=sys.stderr)
        return 2
    log = Path(path).open("a", buffering=1, encoding="utf-8")  # noqa: SIM115 (open until exit)
    install(log)
    install_gc_probe(log)
    from agent_lsp.cli.main import main as agent_main

    return agent_main(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
