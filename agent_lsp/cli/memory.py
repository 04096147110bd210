"""`agent-lsp log | memory | undo`: the session logs, the experience files and the checkpoints,
from a terminal."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.errors import AgentLspError
from agent_lsp.memory import logs
from agent_lsp.memory.project import ProjectMemory
from agent_lsp.memory.recall import recall
from agent_lsp.project.workspace import Workspace

EXIT_OK, EXIT_NOT_DONE, EXIT_USAGE = 0, 1, 2


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _out(text: str) -> None:
    print(text, flush=True)


def _pick_log(folder: Path, session: str | None) -> Path | None:
    found = logs.session_logs(folder)
    if session:
        found = [p for p in found if session in p.stem]
        if len(found) > 1:
            _err(f"agent-lsp: {session!r} matches {len(found)} sessions; say more")
            return None
    if not found:
        _err(
            f"agent-lsp: no session log{' matches ' + repr(session) if session else ''} in {folder}"
        )
        return None
    return found[-1]


def show_log(
    root: Path,
    follow: bool = False,
    session: str | None = None,
    listing: bool = False,
    raw: bool = False,
    stop_when_idle: float | None = None,
) -> int:
    folder = ProjectMemory(root).layout.logs
    if listing:
        for path in logs.session_logs(folder):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            first = json.loads(lines[0]).get("ts", "?") if lines else "?"
            _out(f"{path.stem}  {first}  {len(lines)} events")
        return EXIT_OK
    path = _pick_log(folder, session)
    if path is None:
        return EXIT_USAGE
    if not follow:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip():
                _out(line if raw else logs.render(line))
        return EXIT_OK
    try:
        for line in logs.follow(path, stop=_idle_stop(path, stop_when_idle)):
            _out(line if raw else logs.render(line))
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _idle_stop(path: Path, seconds: float | None) -> Callable[[], bool]:
    """Never (follow until Ctrl-C), or once the log has not grown for `seconds`."""
    last: list[float] = [time.monotonic(), -1.0]

    def stop() -> bool:
        if seconds is None:
            return False
        size = float(path.stat().st_size) if path.exists() else 0.0
        if size != last[1]:
            last[:] = [time.monotonic(), size]
        return time.monotonic() - last[0] > seconds

    return stop


async def memory(root: Path, action: str, name: str | None) -> int:
    project = ProjectMemory(root)
    warnings: list[str] = []
    try:
        if action == "list":
            for entry in project.entries(warnings):
                tags = f"  [{entry.tags}]" if entry.tags else ""
                _out(f"{entry.name}  {entry.event or '-'}  {entry.title}{tags}")
        elif not name:
            _err(f"agent-lsp memory {action}: name what (a file name or part of one)")
            return EXIT_USAGE
        elif action == "show":
            _out(project.show(name).rstrip())
        elif action == "forget":
            _out(f"forgot {project.forget(name)}")
        else:
            found = recall(project.index, name, warnings)
            _out(found.text or "(nothing relevant)")
    except AgentLspError as exc:
        _err(f"agent-lsp: {exc}")
        return EXIT_NOT_DONE
    for warning in warnings:
        _err(f"agent-lsp: WARN {warning}")
    return EXIT_OK


async def undo(root: Path, steps: int | None, task_id: str | None, force: bool) -> int:
    project = ProjectMemory(root)
    workspace = Workspace(root, TerminalChannel())
    try:
        report = await project.undo(workspace, steps, task_id, force)
    except AgentLspError as exc:
        _err(f"agent-lsp: {exc}")
        return EXIT_NOT_DONE
    _out(report.message())
    return EXIT_OK
