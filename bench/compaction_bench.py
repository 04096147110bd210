"""Prompt tokens of a long scripted task with and without summary compaction, side by side.

The task: 40 steps, each reading one of 8 files of ~4.4 KB (big tool outputs), then an answer;
`model.contextWindow` 16,000 (a free-text task compacts at 70%). Both runs use the real
`openai` client against the scripted fake server of the test suite, which counts prompt tokens
as the request body's length / 4. "masking" is `[compaction] summarise = false`.

Run: PYTHONPATH=. .venv/bin/python bench/compaction_bench.py  (writes bench/results/compaction.json)
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from agent_lsp.config.schema import Settings
from agent_lsp.loop.compaction import SUMMARY_PROMPT
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall

STEPS = 40
FILES = 8
RESULTS = Path(__file__).resolve().parent / "results"
SUMMARY = "## Task\nreview the data files\n## Files touched\n" + "".join(
    f"- data{n}.txt: read, rows of readings\n" for n in range(FILES)
)


def project(root: Path) -> None:
    root.mkdir(parents=True)
    for n in range(FILES):
        rows = "".join(f"reading {i} of file {n}: " + "v" * 12 + "\n" for i in range(120))
        (root / f"data{n}.txt").write_text(rows)


async def run(summarise: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "p"
        project(root)
        plan = [
            Reply(tool_calls=[ToolCall("read_file", {"path": f"data{n % FILES}.txt"})])
            for n in range(STEPS)
        ]
        plan.append(Reply("Reviewed."))

        def answer(body: dict[str, Any]) -> Reply:
            if body["messages"][0]["content"] == SUMMARY_PROMPT:
                return Reply(SUMMARY)
            return plan.pop(0)

        with FakeOpenAIServer(default_reply=answer) as fake:
            settings = Settings.model_validate(
                {
                    "model": {
                        "baseUrl": fake.base_url,
                        "name": "fake-model",
                        "apiKey": "k",
                        "contextWindow": 16_000,
                        "maxRetries": 0,
                    },
                    "maxSteps": STEPS + 5,
                    "compaction": {"summarise": summarise},
                }
            )
            session = Session(root, settings, OpenAICompatModel(settings.model))
            outcome = await session.run_task(
                Task(kind=TaskKind.TASK, instruction="review the data files"), RecordingChannel()
            )
            await session.aclose()
            sizes = [len(json.dumps(r["messages"])) // 4 for r in fake.requests]
            summaries = sum(r["messages"][0]["content"] == SUMMARY_PROMPT for r in fake.requests)
    return {
        "status": outcome.status.value,
        "steps": outcome.steps,
        "requests": len(sizes),
        "summary_calls": summaries,
        "prompt_tokens_total": outcome.usage.prompt_tokens,
        "prompt_tokens_peak": max(sizes),
        "prompt_tokens_last": sizes[-1],
    }


async def main() -> None:
    rows = {"masking": await run(False), "summary": await run(True)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "compaction.json").write_text(json.dumps(rows, indent=1) + "\n")
    keys = list(rows["masking"])
    print(f"{'':22}{'masking':>12}{'summary':>12}   (load {os.getloadavg()[0]:.1f})")
    for key in keys:
        print(f"{key:22}{rows['masking'][key]!s:>12}{rows['summary'][key]!s:>12}")


if __name__ == "__main__":
    asyncio.run(main())
