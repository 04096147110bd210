"""A task's totals: wall time, model calls, tool runs, tokens and the cost where a price is set."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from agent_lsp.loop.summary import task_totals
from agent_lsp.messages import TaskOutcome, TaskStatus, Usage
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import fix_average_script
from tests.test_cli import agent_lsp


def test_the_run_summary_gives_time_calls_tool_runs_tokens_and_cost(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    config = Path(server_env["HOME"]) / ".config" / "agent-lsp" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[model]\nprice = {input = 2.5, output = 10}\n")
    script = [dataclasses.replace(r, usage=(1000, 100)) for r in fix_average_script()]
    fake_openai.script(*script)
    done = agent_lsp("run", "make the failing test pass", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    # 4 calls of 1000 + 100 tokens at $2.5 / $10 per million: $0.0100 + $0.0040
    assert re.fullmatch(
        r"  \d+\.\d s, 4 model calls, 3 tool runs, tokens: 4000 in, 400 out, cost \$0\.0140", last
    ), done.stdout


def test_without_a_price_there_is_no_cost_and_estimates_say_so() -> None:
    outcome = TaskOutcome(
        status=TaskStatus.COMPLETED,
        summary="done",
        seconds=75.4,
        tool_runs=1,
        usage=Usage(prompt_tokens=10, completion_tokens=2, calls=1, estimated=True),
    )
    assert task_totals(outcome) == (
        "1 min 15 s, 1 model call, 1 tool run, tokens: ≈10 in, ≈2 out (estimated)"
    )
