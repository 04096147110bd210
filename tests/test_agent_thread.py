"""The agent thread: tasks run on a loop of their own; the editor channel runs on the server's."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from agent_lsp.lsp.agent_thread import SWITCH_INTERVAL, AgentThread, CrossLoopChannel
from agent_lsp.messages import AgentEvent, EventKind
from agent_lsp.project.diagnostics import EDITOR_PER_FILE, DiagnosticStore
from agent_lsp.task import DiagnosticInfo


@pytest.fixture
def worker() -> Iterator[AgentThread]:
    thread = AgentThread("test agent")
    yield thread
    thread.close(grace=1)


class ThreadRecordingChannel:
    """Records on which thread each call ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def buffers(self) -> Mapping[Path, str]:
        self.calls.append(("buffers", threading.get_ident()))
        return {Path("/p/a.py"): "x = 1\n"}

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        self.calls.append((f"apply_edit {path.name} {new_text!r} {label}", threading.get_ident()))

    async def report(self, event: AgentEvent) -> None:
        self.calls.append((f"report {event.message}", threading.get_ident()))

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        self.calls.append((f"ask {question}", threading.get_ident()))
        return options[-1]


async def test_work_runs_on_the_agent_thread_and_returns_its_result(worker: AgentThread) -> None:
    async def where() -> tuple[int, str]:
        await asyncio.sleep(0)
        return threading.get_ident(), threading.current_thread().name

    ident, name = await worker.run(where())
    assert ident != threading.get_ident() and name == "test agent"
    assert sys.getswitchinterval() <= SWITCH_INTERVAL
    again, _ = await worker.run(where())
    assert again == ident  # one thread, reused


async def test_errors_come_back_to_the_caller(worker: AgentThread) -> None:
    async def fail() -> None:
        raise ValueError("broken tool call")

    with pytest.raises(ValueError, match="broken tool call"):
        await worker.run(fail())


async def test_cancelling_the_caller_waits_for_the_task_to_clean_up(worker: AgentThread) -> None:
    events: list[str] = []
    started = threading.Event()

    async def long_task() -> None:
        try:
            started.set()
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append("cancelled")
            await asyncio.sleep(0.2)  # e.g. killing a test run's process group
            events.append("cleaned up")
            raise

    caller = asyncio.create_task(worker.run(long_task()))
    await asyncio.to_thread(started.wait, 10)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert events == ["cancelled", "cleaned up"]


async def test_a_task_that_cancels_itself_is_reported_cancelled(worker: AgentThread) -> None:
    async def gives_up() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(1)

    with pytest.raises(asyncio.CancelledError):
        await worker.run(gives_up())


async def test_the_channel_runs_every_call_on_the_servers_thread(worker: AgentThread) -> None:
    inner = ThreadRecordingChannel()
    channel = CrossLoopChannel(inner, asyncio.get_running_loop())
    home = threading.get_ident()

    async def agent_side() -> tuple[dict[Path, str], str | None]:
        texts = dict(channel.buffers())
        await channel.apply_edit(Path("/p/a.py"), "x = 2\n", "fix")
        await channel.report(AgentEvent(kind=EventKind.THINKING, message="asking the model"))
        answer = await channel.ask("run pytest?", ["Allow once", "Deny"])
        return texts, answer

    texts, answer = await worker.run(agent_side())
    assert texts == {Path("/p/a.py"): "x = 1\n"} and answer == "Deny"
    assert inner.calls == [
        ("buffers", home),
        ("apply_edit a.py 'x = 2\\n' fix", home),
        ("report asking the model", home),
        ("ask run pytest?", home),
    ]
    assert dict(channel.buffers()) == texts  # on the server's thread it calls straight through


async def test_close_cancels_running_work_and_ends_the_thread(worker: AgentThread) -> None:
    events: list[str] = []
    started = threading.Event()

    async def long_task() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            events.append("stopped")

    caller = asyncio.create_task(worker.run(long_task()))
    await asyncio.to_thread(started.wait, 10)
    threads = {t.name for t in threading.enumerate()}
    assert "test agent" in threads
    worker.close(grace=1)
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert events == ["stopped"]
    deadline = time.monotonic() + 10
    while any(t.name == "test agent" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the agent thread did not end"
        await asyncio.sleep(0.01)
    assert not worker.started

    async def after() -> str:
        return "a fresh loop"

    assert await worker.run(after()) == "a fresh loop"


def test_diagnostic_store_keeps_each_editor_diagnostic_once_and_the_newest() -> None:
    store = DiagnosticStore()
    path = Path("/p/a.py")
    first = DiagnosticInfo(message="unused import os", line=0, source="ruff")
    store.seen_in_editor(path, [first, first.model_copy()])
    store.seen_in_editor(path, [DiagnosticInfo(message="unused import os", line=0, source="ruff")])
    assert store.get() == {path: [first]}
    many = [DiagnosticInfo(message=f"problem {i}", line=i + 1) for i in range(EDITOR_PER_FILE + 5)]
    store.seen_in_editor(path, many)
    kept = store.get(path)[path]
    assert len(kept) == EDITOR_PER_FILE and kept == many[5:]


def test_diagnostic_store_is_safe_across_threads() -> None:
    store = DiagnosticStore()
    path = Path("/p/a.py")
    stop = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        i = 0
        while not stop.is_set():
            store.seen_in_editor(
                Path(f"/p/{i % 5}.py"), [DiagnosticInfo(message="m", line=i % 300)]
            )
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(300):
            try:
                store.get()
                store.get(path)
            except BaseException as exc:  # dictionary changed size during iteration, ...
                errors.append(exc)
    finally:
        stop.set()
        writer.join()
    assert errors == []
    assert sum(len(d) for d in store.get().values()) > 0
