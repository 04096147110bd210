"""How soon a task reaches the model and the user: `agent-lsp acp` against `agent-lsp serve` on
the same task, the same project and the same fake model, alternating in one run.

- ACP: from `session/new` sent (the agent process already initialized) to the model's first
  request, and to the first streamed word (`agent_message_chunk`) at the client — the SDK's
  own client side (`agent-client-protocol`).
- LSP: from `workspace/executeCommand agentLsp.runTask` sent (the server initialized) to the
  model's first request (no word reaches an LSP client before the reply is whole).

The model is the test suite's fake OpenAI-compatible server in this process (its first reply is
a sentence, streamed in chunks; then it hangs until the task is cancelled). Each round starts a
fresh agent process on a fresh copy of the sample project, so both pay the same start-up.

Run: .venv/bin/python bench/acp_first_token.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from agent_lsp.demo import copy_sample
from bench.lsp_client import LspClient
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply

TASK = "Make the failing test in tests/test_calc.py pass."
WORDS = "I will read calc.py first, then fix the average and run the tests again."


class Arrivals:
    """When the fake model's requests arrived (polled: the fake runs in threads of its own)."""

    def __init__(self, server: FakeOpenAIServer) -> None:
        self.server = server
        self.seen = 0
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            count = len(self.server.requests)
            while self.seen < count:
                self.times.append(time.perf_counter())
                self.seen += 1
            time.sleep(0.002)

    async def after(self, index: int, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while len(self.times) <= index:
            if time.monotonic() > deadline:
                raise TimeoutError("the model was never asked")
            await asyncio.sleep(0.005)
        return self.times[index]

    def close(self) -> None:
        self._stop.set()


class Client:
    """An ACP client that notes when the model's first word arrives (the agent's own progress
    lines are not the model's words) and denies every permission."""

    def __init__(self) -> None:
        self.first_word: float | None = None
        self.word = asyncio.Event()

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if not isinstance(update, AgentMessageChunk) or self.first_word is not None:
            return
        text = getattr(update.content, "text", "")
        if text.strip() and text.strip() in WORDS:  # the model's words, not a progress line
            self.first_word = time.perf_counter()
            self.word.set()


def environment(base_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_LSP_"))}
    env.update(
        HOME=str(home),
        AGENT_LSP_BASE_URL=base_url,
        AGENT_LSP_API_KEY="bench-key",
        AGENT_LSP_MODEL="fake-model",
    )
    return env


async def acp_round(
    server: FakeOpenAIServer, arrivals: Arrivals, scratch: Path
) -> tuple[float, float]:
    project = copy_sample(scratch / "acp" / "calc")
    env = environment(server.base_url, scratch / "home")
    client = Client()
    with (scratch / "acp-stderr.txt").open("wb") as err:
        async with spawn_agent_process(
            client,  # pyright: ignore[reportArgumentType] - the two methods this bench needs
            sys.executable,
            "-m",
            "agent_lsp",
            "acp",
            env=env,
            transport_kwargs={"stderr": err.fileno()},
        ) as (conn, _process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
            )
            index = arrivals.seen
            started = time.perf_counter()
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            prompt = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[text_block(TASK)])
            )
            asked = await arrivals.after(index)
            await asyncio.wait_for(client.word.wait(), 60)
            await conn.cancel(session_id=session.session_id)
            await asyncio.wait_for(prompt, 60)
    assert client.first_word is not None
    return asked - started, client.first_word - started


async def lsp_round(server: FakeOpenAIServer, arrivals: Arrivals, scratch: Path) -> float:
    project = copy_sample(scratch / "lsp" / "calc")
    env = environment(server.base_url, scratch / "home")
    argv = [sys.executable, "-m", "agent_lsp", "serve"]
    client = await LspClient.spawn("agent-lsp", argv, env, project)
    try:
        await client.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": project.as_uri(), "capabilities": {}},
            60,
        )
        client.notify("initialized", {})
        index = arrivals.seen
        started = time.perf_counter()
        await client.request(
            "workspace/executeCommand",
            {"command": "agentLsp.runTask", "arguments": [{"task": TASK}]},
            60,
        )
        asked = await arrivals.after(index)
        await client.request(
            "workspace/executeCommand", {"command": "agentLsp.cancel", "arguments": [{}]}, 60
        )
    finally:
        await client.shutdown()
    return asked - started


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:,.0f} ms (min {min(values) * 1000:,.0f})"


async def main_async(rounds: int) -> int:
    acp_asked: list[float] = []
    acp_word: list[float] = []
    lsp_asked: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        for n in range(rounds):
            for front in ("acp", "lsp") if n % 2 == 0 else ("lsp", "acp"):
                folder = Path(scratch) / f"{front}-{n}"
                (folder / "home").mkdir(parents=True)
                # a fresh model each round: a cancelled task leaves no entry for the next
                with FakeOpenAIServer() as server:
                    server.script(Reply(WORDS), Hang(120))
                    arrivals = Arrivals(server)
                    try:
                        if front == "acp":
                            asked, word = await acp_round(server, arrivals, folder)
                            acp_asked.append(asked)
                            acp_word.append(word)
                        else:
                            lsp_asked.append(await lsp_round(server, arrivals, folder))
                    finally:
                        arrivals.close()
    load = os.getloadavg()[0]
    print(f"{rounds} rounds each, alternating; {os.cpu_count()} CPUs, load {load:.1f}; medians")
    print("| front end | to the model's first request | to the first streamed word |")
    print("| --- | --- | --- |")
    print(f"| `agent-lsp acp` (session/new) | {ms(acp_asked)} | {ms(acp_word)} |")
    print(
        f"| `agent-lsp serve` (agentLsp.runTask) | {ms(lsp_asked)} | none before the whole reply |"
    )
    ratio = statistics.median(acp_asked) / statistics.median(lsp_asked)
    print(f"ACP / LSP, to the first request: {ratio:.2f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    return asyncio.run(main_async(args.rounds))


if __name__ == "__main__":
    sys.exit(main())
