"""Commands `run_command` ran, per task, in `.agent-lsp/cache/commands.json` (bounded:
the 200 most recent commands, each with the last few tasks that ran it). When one normalised
command has run in 3 different tasks and no project tool covers it, the task's end suggests
making it a project tool — once per command, never applied by itself.

The file is signed with this user's key (`agent_lsp.signing`): one a repository ships (say,
to make a command look habitual) is ignored, said once, and the record starts afresh."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from agent_lsp.memory.layout import Layout
from agent_lsp.messages import ChatMessage
from agent_lsp.safety.reads import Refused
from agent_lsp.signing import Unsigned, seal, unseal

__all__ = ["TASKS_FOR_SUGGESTION", "commands_ran", "normalise", "record_commands"]

TASKS_FOR_SUGGESTION = 3
MAX_COMMANDS = 200
KIND = "commands"  # the kind the file is signed as
MAX_CHARS = 300  # longer command lines are not kept (a script, not a habit)
_PLAIN = re.compile(r"[^\"$`\\!\x00-\x1f\x7f]*")  # nothing a shell reads in "double quotes"


def normalise(command: str) -> str:
    """One spelling per command: its words, quoted only where needed, single-spaced."""
    try:
        return shlex.join(shlex.split(command))
    except ValueError:
        return " ".join(command.split())


def commands_ran(messages: Sequence[ChatMessage]) -> list[str]:
    """The `run_command` commands of a transcript, normalised, each once, in order."""
    out: list[str] = []
    for message in messages:
        for call in message.tool_calls:
            if call.name != "run_command":
                continue
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                command = normalise(str(json.loads(call.arguments)["command"]))
                if (
                    command
                    and len(command) <= MAX_CHARS
                    and command.isprintable()  # no escape sequence reaches a terminal
                    and command not in out
                ):
                    out.append(command)
    return out


def _covered(command: str, tools: Iterable[Sequence[str]]) -> bool:
    """Does a project tool (its argv up to the first `{arg}`) run this command?"""
    words = command.split(" ")
    for argv in tools:
        cut = next((i for i, part in enumerate(argv) if "{" in part), len(argv))
        fixed = [shlex.quote(part) for part in argv[:cut]]
        if fixed and words[: len(fixed)] == fixed:
            return True
    return False


def _load(layout: Layout, path: Path, said: list[str]) -> dict[str, Any]:
    try:
        data = json.loads(unseal(KIND, layout.reads.read_bytes(path, "")).decode("utf-8"))
    except Unsigned as exc:
        said.append(f"{layout.rel(path)}: ignored: {exc}; started afresh")
        return {}
    except (OSError, ValueError):
        return {}
    return cast("dict[str, Any]", data) if isinstance(data, dict) else {}


def record_commands(
    root: Path, task_id: str, commands: Sequence[str], tools: Iterable[Sequence[str]] = ()
) -> list[str]:
    """Record this task's commands; the lines to say now: the suggestions due (each once),
    after a warning when the file there was not this user's."""
    if not commands:
        return []
    layout = Layout(root)
    path = layout.base / "cache" / "commands.json"
    warned: list[str] = []
    data = _load(layout, path, warned)
    recorded, said = data.get("commands"), data.get("suggested")
    seen: dict[str, list[str]] = {
        str(k): [str(t) for t in cast("list[Any]", v)][-TASKS_FOR_SUGGESTION:]
        for k, v in (cast("dict[str, Any]", recorded) if isinstance(recorded, dict) else {}).items()
        if isinstance(v, list)
    }
    suggested = {str(s) for s in (cast("list[Any]", said) if isinstance(said, list) else [])}
    for command in commands:
        tasks = [t for t in seen.pop(command, []) if t != task_id] + [task_id]
        seen[command] = tasks[-TASKS_FOR_SUGGESTION:]  # most recent last
    seen = dict(list(seen.items())[-MAX_COMMANDS:])
    tool_list = list(tools)
    due = [
        c
        for c in commands
        if len(seen.get(c, ())) >= TASKS_FOR_SUGGESTION
        and c not in suggested
        and not _covered(c, tool_list)
    ]
    suggested.update(due)
    body = {"version": 1, "commands": seen, "suggested": sorted(suggested)[-MAX_COMMANDS:]}
    with contextlib.suppress(OSError, Refused):
        layout.reads.mkdir(path.parent)
        layout.reads.write_bytes(path, seal(KIND, (json.dumps(body, indent=1) + "\n").encode()))
    return warned + [_suggestion(c) for c in due]


def _suggestion(command: str) -> str:
    """The line said to the user: its `agent-lsp improve` command line is quoted for a POSIX
    shell, so pasting it runs nothing of the command it names (`$(…)`, backticks, `!`)."""
    request = "add a tool for " + command
    request = f'"{request}"' if _PLAIN.fullmatch(request) else shlex.quote(request)
    return (
        f"`{command}` ran in {TASKS_FOR_SUGGESTION} tasks: "
        f"`agent-lsp improve {request}` makes it a project tool"
    )
