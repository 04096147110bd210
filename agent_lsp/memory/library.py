"""The experience files as a library: distil and save one (file, index row, log entry), list,
show and forget them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from agent_lsp.errors import AgentLspError
from agent_lsp.memory.distill import distill
from agent_lsp.memory.experience import NAME, Experience, parse_experience, write_experience
from agent_lsp.memory.index import MemoryIndex
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.logs import SessionLog
from agent_lsp.memory.state import read_text_file
from agent_lsp.messages import AgentEvent, ChatMessage, EventKind, TaskOutcome
from agent_lsp.seams import EditorChannel, Model
from agent_lsp.task import Task


class MemoryEntry(BaseModel):
    name: str
    date: str
    title: str
    tags: str
    event: str


class Library:
    def __init__(self, layout: Layout, index: MemoryIndex, log: SessionLog) -> None:
        self.layout = layout
        self.index = index
        self.log = log

    async def save(self, exp: Experience, topic: str, warnings: list[str]) -> Path:
        """Write the file and its index row."""
        exp.project = exp.project or self.layout.root.name

        def write() -> Path:
            self.layout.reads.mkdir(self.layout.memory)
            path = write_experience(self.layout.reads, self.layout.memory, exp, topic)
            self.index.sync(warnings)
            return path

        path = await asyncio.to_thread(write)
        self.log.record("memory", "memory", action="experience written", path=self.layout.rel(path))
        return path

    async def distil(
        self,
        task: Task,
        messages: Sequence[ChatMessage],
        outcome: TaskOutcome,
        event: str,
        note: str,
        model: Model,
        channel: EditorChannel | None,
    ) -> Path:
        """The one extra model call, then the experience saved (a plain one if the call fails)."""
        await _say(channel, f"memory: distilling an experience ({event}): one model call")
        started = asyncio.get_running_loop().time()
        exp, topic, usage, warning = await distill(model, task, messages, outcome, event, note)
        self.log.record(
            "model_call",
            "model",
            purpose="distill",
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            latency_ms=round((asyncio.get_running_loop().time() - started) * 1000),
            tool_calls=[],
        )
        warnings = [warning] if warning else []
        path = await self.save(exp, topic, warnings)
        for text in warnings:
            self.log.record("warn", "memory", message=text)
            await _say(channel, f"WARN {text}")
        await _say(channel, f"memory: experience saved ({event}): {self.layout.rel(path)}")
        return path

    def entries(self, warnings: list[str]) -> list[MemoryEntry]:
        self.index.sync(warnings)
        out: list[MemoryEntry] = []
        for path in self._files():
            text = read_text_file(self.layout.reads, path, f"memory/{path.name}", warnings)
            if text is None:
                continue
            exp = parse_experience(text, path.name)
            tags = ", ".join(exp.tags)
            out.append(
                MemoryEntry(
                    name=path.name, date=exp.date, title=exp.title, tags=tags, event=exp.event
                )
            )
        return out

    def find(self, name: str) -> Path:
        """An experience file by its name or a unique part of it."""
        folder = self.layout.memory
        names = [p.name for p in self._files()]
        if name in names:
            return folder / name
        matches = [n for n in names if name.lower() in n.lower()]
        if len(matches) == 1:
            return folder / matches[0]
        if not matches:
            raise AgentLspError(f"no experience matches {name!r}")
        raise AgentLspError(f"{name!r} matches {len(matches)} experiences: {', '.join(matches)}")

    def _files(self) -> list[Path]:
        """The experience files the guard lets through, by name."""
        return self.layout.reads.folder(self.layout.memory, keep=lambda p: bool(NAME.match(p.name)))

    def show(self, name: str) -> str:
        path = self.find(name)
        try:
            return self.layout.reads.read_bytes(path).decode("utf-8", errors="replace")
        except OSError as exc:
            raise AgentLspError(f"{path.name}: cannot be shown ({exc.strerror})") from exc

    def forget(self, name: str) -> str:
        path = self.find(name)
        path.unlink()
        self.index.forget(path.name, [])
        self.log.record("memory", "user", action="forgotten", path=self.layout.rel(path))
        return path.name


async def _say(channel: EditorChannel | None, text: str) -> None:
    if channel is not None:
        await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=text))
