"""A fake OpenAI-compatible model that keeps an agent task busy, for `lsp_bench.py`.

Runs `tests/fakes/openai_server.FakeOpenAIServer` in a process of its own (its HTTP threads then
never compete for the benchmark client's GIL) with a script of tool rounds: each model turn waits
`--delay` seconds (a model thinking), then asks for one tool call, cycling through read-only tools
and test runs on the sample project: `run_tests` (pytest in the shadow workspace), `read_file`
(also of the big open buffer), `search_text`, `find_symbol`, `list_files`, `git_status`,
`git_diff`, `get_diagnostics`, `run_command` (read-only). After `--rounds` turns the model hangs
(`Hang`) until the task is cancelled or the server stops.

Protocol with the parent: one JSON line on stdout with the base URL; then each line `stats` on
stdin is answered with one JSON line (`requests`, `remaining`); end of stdin stops the server.

Run: `python bench/fake_model.py --rounds 60 --delay 0.15 --big-file big_20000.py`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.openai_server import (
    FakeOpenAIServer,
    Hang,
    Reply,
    ScriptEntry,
    ToolCall,
)


def tool_cycle(big_file: str) -> list[ToolCall]:
    """Varied calls (the loop guard pauses a task that repeats one action 4 times in 5)."""
    return [
        ToolCall("run_tests", {}),
        ToolCall("read_file", {"path": "calc.py"}),
        ToolCall("read_file", {"path": big_file}),
        ToolCall("search_text", {"pattern": "def "}),
        ToolCall("find_symbol", {"name": "average"}),
        ToolCall("list_files", {"path": "."}),
        ToolCall("get_diagnostics", {}),
        ToolCall("git_status", {}),
        ToolCall("read_file", {"path": big_file, "start_line": 5000, "end_line": 5400}),
        ToolCall("search_text", {"pattern": "return"}),
        ToolCall("find_symbol", {"name": "Status"}),
        ToolCall("git_diff", {}),
        ToolCall("run_command", {"command": "ls -la"}),
        ToolCall("read_file", {"path": "tests/test_calc.py"}),
    ]


def busy_script(rounds: int, delay: float, big_file: str, final_hang: float) -> list[ScriptEntry]:
    cycle = tool_cycle(big_file)
    script: list[ScriptEntry] = []
    for turn in range(rounds):
        script += [Hang(delay), Reply(tool_calls=[cycle[turn % len(cycle)]])]
    return [*script, Hang(final_hang), Reply("Still looking; giving up.")]


def tool_results(request: dict[str, Any]) -> dict[str, int]:
    """How the task's tool calls so far went (`tool: status` counts), from the messages of the
    latest model request."""
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    for message in request.get("messages") or []:
        if not isinstance(message, dict):
            continue
        for call in message.get("tool_calls") or []:
            names[str(call.get("id"))] = str((call.get("function") or {}).get("name", "?"))
        if message.get("role") != "tool":
            continue
        content = str(message.get("content", ""))
        try:
            status = str(json.loads(content).get("status", "?"))
        except (ValueError, AttributeError):
            status = "error" if content.lower().startswith(("error", "refused")) else "ok?"
        key = f"{names.get(str(message.get('tool_call_id')), '?')}: {status}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="tool rounds before hanging")
    parser.add_argument("--delay", type=float, default=0.15, help="seconds per model turn")
    parser.add_argument("--big-file", default="big_20000.py", help="the big buffer's path")
    parser.add_argument("--final-hang", type=float, default=600.0, help="seconds, after rounds")
    args = parser.parse_args(argv)

    fake = FakeOpenAIServer()
    fake.script(*busy_script(args.rounds, args.delay, args.big_file, args.final_hang))
    fake.start()
    try:
        print(json.dumps({"base_url": fake.base_url}), flush=True)
        for line in sys.stdin:
            if line.strip() == "stats":
                stats = {
                    "requests": len(fake.requests),
                    "remaining": fake.remaining,
                    "tool_results": tool_results(fake.requests[-1] if fake.requests else {}),
                }
                print(json.dumps(stats), flush=True)
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
