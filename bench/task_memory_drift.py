"""What grows between agent tasks: tracemalloc snapshots after tasks 2 and N of one session.

    .venv/bin/python bench/task_memory_drift.py [--tasks 5] [--top 15]

One `Session` on a copy of the demo sample runs the demo's scripted task (run the tests, read,
fix, run the tests again, report) N times, the sample's file put back after each. After every
task: `gc.collect()`, the Python heap (`tracemalloc`) and the process's RSS. The difference of
the snapshots after task 2 and after the last one, grouped by the line that allocated, says
what is kept per task; the first two tasks are left out (imports, caches filled once).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import os
import sys
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_lsp.cli.terminal import TerminalChannel  # noqa: E402
from agent_lsp.config.schema import Settings  # noqa: E402
from agent_lsp.demo import TASK, copy_sample, demo_model  # noqa: E402
from agent_lsp.messages import ChatMessage, ModelReply, ToolSpec  # noqa: E402
from agent_lsp.session import Session  # noqa: E402
from agent_lsp.task import Task, TaskKind  # noqa: E402


class Repeating:
    """The demo's scripted model, its script started again for every task."""

    def __init__(self) -> None:
        self.current = demo_model()

    async def complete(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
    ) -> ModelReply:
        return await self.current.complete(messages, tools)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def run(tasks: int, top: int) -> None:
    project = copy_sample()
    originals = {p: p.read_bytes() for p in project.glob("*.py")}
    model = Repeating()
    session = Session(project, Settings.model_validate({"model": {"name": "scripted"}}), model)
    snapshots: dict[int, tracemalloc.Snapshot] = {}
    tracemalloc.start(8)
    for n in range(1, tasks + 1):
        model.current = demo_model()
        channel = TerminalChannel(out=io.StringIO())
        await session.run_task(Task(kind=TaskKind.TASK, instruction=TASK), channel)
        for path, data in originals.items():
            path.write_bytes(data)
        gc.collect()
        traced, _ = tracemalloc.get_traced_memory()
        print(f"after task {n}: heap {traced / 2**20:.2f} MiB, RSS {rss_mib():.1f} MiB")
        if n in (2, tasks):
            snapshots[n] = tracemalloc.take_snapshot()
    await session.aclose()
    if 2 in snapshots and tasks > 2:
        ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
        later = snapshots[tasks].filter_traces(ignore)
        diff = later.compare_to(snapshots[2].filter_traces(ignore), "traceback")
        print(f"growth from task 2 to task {tasks} (top {top}, by traceback):")
        for stat in diff[:top]:
            frames = [f"{Path(f.filename).name}:{f.lineno}" for f in stat.traceback][:4]
            print(
                f"  {stat.size_diff / 1024:+8.1f} KiB {stat.count_diff:+6d}  {' < '.join(frames)}"
            )
    print(f"load average: {os.getloadavg()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(run(args.tasks, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
