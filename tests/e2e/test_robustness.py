"""Bad input and rough clients: the server answers with errors, stays up, and keeps files whole."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from tests.e2e.editor_client import MESSAGE_WAIT, REQUEST_WAIT, editor_session
from tests.e2e.test_lsp_fix import DIAGNOSTIC, ask_agent_to_fix
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply
from tests.scripts import fix_average_script, outcome


class RawClient:
    """Speaks JSON-RPC over the server's stdio byte by byte, so it can also send garbage."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.inbox: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, env: dict[str, str]) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agent_lsp",
            "serve",
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while (line := await self.proc.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(await self.proc.stdout.readexactly(length))

    async def response(self, msg_id: int, timeout: float = REQUEST_WAIT) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while True:
                message = await self.read()
                if message.get("id") == msg_id and "method" not in message:
                    return message
                self.inbox.append(message)
                if "method" in message and "id" in message:  # answer server requests
                    self.send({"id": message["id"], "result": None})

        return await asyncio.wait_for(wait(), timeout)

    def fix(self, msg_id: int, path: Path, message: str) -> None:
        """agentLsp.fix for a diagnostic on line 10 of `path`."""
        diagnostic = {
            "range": {"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 5}},
            "message": message,
        }
        self.send(
            {
                "id": msg_id,
                "method": "workspace/executeCommand",
                "params": {"command": "agentLsp.fix", "arguments": [path.as_uri(), diagnostic]},
            }
        )

    async def notification(self, method: str, text: str, timeout: float) -> dict[str, Any]:
        """The first `method` notification whose params mention `text` (server requests are
        answered with null meanwhile)."""

        async def wait() -> dict[str, Any]:
            while True:
                for message in self.inbox:
                    if message.get("method") == method and text in json.dumps(message):
                        return message
                message = await self.read()
                self.inbox.append(message)
                if "method" in message and "id" in message:
                    self.send({"id": message["id"], "result": None})

        return await asyncio.wait_for(wait(), timeout)

    async def initialize(self, root: Path) -> None:
        self.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}},
            }
        )
        assert "result" in await self.response(1)
        self.send({"method": "initialized", "params": {}})


async def test_malformed_messages_get_errors_and_the_server_stays_up(
    project: Path, server_env: dict[str, str]
) -> None:
    client = await RawClient.start(server_env)
    await client.initialize(project)
    client.send_raw(b"Content-Length: 9\r\n\r\n{not json")  # broken JSON
    client.send(
        {
            "id": 2,
            "method": "workspace/executeCommand",
            "params": {"command": "agentLsp.doesNotExist", "arguments": []},
        }
    )
    unknown = await client.response(2)
    assert unknown["error"]["message"]
    client.send(
        {
            "id": 3,
            "method": "workspace/executeCommand",
            "params": {"command": "agentLsp.fix", "arguments": ["only-a-uri"]},
        }
    )
    wrong = await client.response(3)
    assert wrong["error"]["code"] == -32602  # invalid params
    client.send({"id": 4, "method": "textDocument/codeAction", "params": {"oops": True}})
    bad_params = await client.response(4)
    assert "error" in bad_params
    client.send({"id": 5, "method": "shutdown"})
    assert (await client.response(5)).get("result") is None
    client.send({"method": "exit"})
    assert await asyncio.wait_for(client.proc.wait(), REQUEST_WAIT) == 0


async def test_client_disconnecting_mid_task_leaves_files_whole(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Hang(30))
    before = (project / "calc.py").read_text()
    client = await RawClient.start(server_env)
    await client.initialize(project)
    client.fix(2, project / "calc.py", "wrong average")
    assert "taskId" in (await client.response(2))["result"]
    await asyncio.to_thread(fake_openai.wait_for_requests, 1, REQUEST_WAIT)
    assert client.proc.stdin is not None
    client.proc.stdin.close()  # the editor went away
    started = time.monotonic()
    await asyncio.wait_for(client.proc.wait(), 20)
    assert time.monotonic() - started < 20
    assert (project / "calc.py").read_text() == before


async def test_big_buffer_and_a_change_storm_during_a_task(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    big = project / "big.py"
    big.write_text("".join(f"value_{i} = {i}\n" for i in range(50_000)))
    fake_openai.script(Hang(1.5), *fix_average_script())
    async with editor_session("vscode", project, server_env) as client:
        big_uri = client.open(big)
        uri = client.open(project / "calc.py")
        await ask_agent_to_fix(client, uri)
        for n in range(300):  # the user keeps typing in another file while the agent works
            client.versions[big_uri] += 1
            client.text_document_did_change(
                t.DidChangeTextDocumentParams(
                    text_document=t.VersionedTextDocumentIdentifier(
                        uri=big_uri, version=client.versions[big_uri]
                    ),
                    content_changes=[
                        t.TextDocumentContentChangePartial(
                            range=t.Range(
                                start=t.Position(line=n, character=0),
                                end=t.Position(line=n, character=0),
                            ),
                            text="# typed\n",
                        )
                    ],
                )
            )
        started = time.monotonic()
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=big_uri),
                range=t.Range(
                    start=t.Position(line=49_000, character=0),
                    end=t.Position(line=49_000, character=3),
                ),
                context=t.CodeActionContext(diagnostics=[DIAGNOSTIC]),
            )
        )
        assert actions is not None and time.monotonic() - started < 5
        await client.wait_for_message("agent-lsp: completed")
        assert client.buffers[uri].count("return sum(values) / len(values)") == 1
        assert big.read_text().count("# typed") == 0  # the typing stayed in the buffer


def _children(pid: int) -> dict[int, str]:
    """Live child processes of `pid`: pid -> command line."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(entry.name)] = cmdline
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_big_files_are_parsed_in_a_child_that_ends_with_the_task(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """The symbol index parses big files in a child process (a long parse would hold the
    server's GIL); the child is started by the first task (seen at its first model request,
    right after the index build: well within the worker's 30 s idle time), gone when the task
    ends, and nothing else is left (no multiprocessing resource tracker)."""
    (project / "big.py").write_text(
        "".join(f"def function_{i}(value):\n    return value + {i}\n\n" for i in range(3000))
    )
    first, *rest = fix_average_script()
    server: list[int] = []
    workers: dict[int, str] = {}

    def look(_: dict[str, Any]) -> Reply:
        workers.update(_children(server[0]))
        return first

    fake_openai.script(look, *rest)
    client = await RawClient.start(server_env)
    server.append(client.proc.pid)
    await client.initialize(project)
    assert _children(client.proc.pid) == {}  # idle: no worker yet
    client.fix(2, project / "calc.py", "wrong average")
    assert "taskId" in (await client.response(2))["result"]

    await client.notification("window/showMessage", "agent-lsp: completed", MESSAGE_WAIT)
    assert [c for c in workers.values() if "agent_lsp.symbols.child" in c] == list(workers.values())
    assert len(workers) == 1, workers
    deadline = time.monotonic() + 60
    while any(_alive(pid) for pid in workers) or _children(client.proc.pid):
        assert time.monotonic() < deadline, f"left after the task: {_children(client.proc.pid)}"
        await asyncio.sleep(0.05)
    client.send({"id": 5, "method": "shutdown"})
    assert (await client.response(5)).get("result") is None
    client.send({"method": "exit"})
    assert await asyncio.wait_for(client.proc.wait(), REQUEST_WAIT) == 0
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"the parse worker outlived the server: {workers}"
        await asyncio.sleep(0.05)


async def test_tasks_started_and_cancelled_in_quick_succession(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """Each cancel waits for the task to stop on the agent's loop before the next may start;
    after three cancelled tasks a fourth runs to completion and edits the buffer once."""
    fake_openai.script(Hang(30), Hang(30), Hang(30), *fix_average_script())
    async with editor_session("vscode", project, server_env) as client:
        uri = client.open(project / "calc.py")
        for round_ in range(1, 4):
            started = await ask_agent_to_fix(client, uri)
            await asyncio.to_thread(fake_openai.wait_for_requests, round_, REQUEST_WAIT)
            cancelled = await client.workspace_execute_command_async(
                t.ExecuteCommandParams(command="agentLsp.cancel", arguments=[started])
            )
            assert cancelled == {"cancelled": True}

            def outcomes() -> int:
                cancelled = outcome("agent-lsp: cancelled: cancelled")
                return sum(bool(re.fullmatch(cancelled, m.message)) for m in client.messages)

            deadline = time.monotonic() + REQUEST_WAIT  # a hang guard
            while outcomes() < round_:
                assert time.monotonic() < deadline, [m.message for m in client.messages]
                await asyncio.sleep(0.05)
        await ask_agent_to_fix(client, uri)
        await client.wait_for_message("agent-lsp: completed")
        assert client.buffers[uri].count("return sum(values) / len(values)") == 1
        assert len(fake_openai.requests) == 3 + 4  # three hung calls, then the whole fix
