"""End to end: the language server's symbol parse worker lives while a task works and is gone
when the task ends (its memory back); the next task starts it again, and what it parses there
(an unsaved buffer) is what `find_symbol` reports. No multiprocessing resource tracker stays.
Whether the worker is seen while a task works is not asserted (it also stops after 30 s idle,
which a loaded machine could reach): `test_symbols_worker_idle.py` shows it starting again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_fix import ask_agent_to_fix
from tests.fakes.openai_server import Error, FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages
from tests.test_symbols_worker import wait_for

WORKER_MARKS = ("agent_lsp.symbols.child", "multiprocessing")  # ours; a spawn or its tracker


def children(pid: int) -> dict[int, str]:
    """The living children of `pid` and their command lines, from /proc."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(entry.name)] = command
    return found


def the_server() -> int:
    [pid] = [p for p, command in children(os.getpid()).items() if "agent_lsp serve" in command]
    return pid


def workers(server: int) -> dict[int, str]:
    return {
        pid: command
        for pid, command in children(server).items()
        if any(mark in command for mark in WORKER_MARKS)
    }


def big_module(functions: int) -> str:
    return "".join(f"def helper_{n}(x):\n    return x + {n}\n\n\n" for n in range(functions))


async def test_the_worker_stops_after_each_task_and_comes_back_for_the_next(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    (project / "big.py").write_text(big_module(300))  # ~12 KB: parsed by the worker
    seen: list[dict[int, str]] = []
    server: list[int] = []

    def look(name: str) -> Any:
        def reply(_: dict[str, Any]) -> Reply:
            seen.append(workers(server[0]))  # the index is built (or synced) before this
            return Reply(tool_calls=[ToolCall("find_symbol", {"name": name})])

        return reply

    fake_openai.script(look("helper_250"), Error(400, "enough"))
    async with editor_session("vscode", project, server_env) as client:
        server.append(the_server())
        uri = client.open(project / "calc.py")
        await ask_agent_to_fix(client, uri)
        await client.wait_for_message("agent-lsp: ")
        assert (
            "big.py:1001 function: def helper_250(x)" in tool_messages(fake_openai.requests[1])[-1]
        )
        [during] = seen  # the worker (unless it was idle 30 s already), nothing beside it
        assert len(during) <= 1
        assert all("agent_lsp.symbols.child" in command for command in during.values())
        assert wait_for(lambda: not workers(server[0]), seconds=120), workers(server[0])

        # Task 2: an unsaved buffer of big.py with one more function, synced at its start.
        big = project / "big.py"
        big_uri = client.open(big)
        client.apply(
            t.ApplyWorkspaceEditParams(
                edit=t.WorkspaceEdit(
                    changes={
                        big_uri: [
                            t.TextEdit(
                                range=t.Range(
                                    start=t.Position(line=0, character=0),
                                    end=t.Position(line=0, character=0),
                                ),
                                new_text="def fresh_one(y):\n    return y\n\n\n",
                            )
                        ]
                    }
                )
            )
        )
        client.messages.clear()
        fake_openai.script(look("helper_250"), Error(400, "enough"))
        await ask_agent_to_fix(client, uri)
        await client.wait_for_message("agent-lsp: ")
        assert (
            "big.py:1005 function: def helper_250(x)" in tool_messages(fake_openai.requests[3])[-1]
        )  # the buffer's line
        assert len(seen) == 2 and len(seen[1]) <= 1  # a worker again: the buffer was parsed
        assert all("agent_lsp.symbols.child" in command for command in seen[1].values())
        assert not set(seen[1]) & set(during)  # a fresh process, if any
        assert wait_for(lambda: not workers(server[0]), seconds=120), workers(server[0])
