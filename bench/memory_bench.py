"""Memory at scale: index and retrieval time with 10,000 experience files, and the tokens memory
adds to the prompt of a task.

Run: .venv/bin/python bench/memory_bench.py [--files N] [--queries N]
     (writes bench/results/memory.json; figures are summarised in bench/memory.md)
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.config.schema import Settings
from agent_lsp.demo import TASK, copy_sample, demo_model
from agent_lsp.loop.prompt import system_prompt
from agent_lsp.memory.experience import Experience, write_experience
from agent_lsp.memory.index import MemoryIndex
from agent_lsp.memory.initd import InitRunner, TaskFacts
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.recall import query_terms, recall
from agent_lsp.memory.state import start_task, write_task_section
from agent_lsp.messages import CHARS_PER_TOKEN, ChatMessage, ModelReply, ToolSpec
from agent_lsp.models.scripted import ScriptedModel
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind

RESULTS = Path(__file__).resolve().parent / "results"
AREAS = [
    "parser",
    "billing",
    "invoice",
    "auth",
    "session",
    "cache",
    "export",
    "report",
    "search",
    "upload",
    "scheduler",
    "webhook",
    "payment",
    "ledger",
    "catalog",
    "inventory",
    "shipping",
    "profile",
    "settings",
    "metrics",
    "queue",
    "mailer",
    "importer",
    "pricing",
    "coupon",
]
VERBS = [
    "parse",
    "load",
    "save",
    "render",
    "validate",
    "merge",
    "compute",
    "format",
    "fetch",
    "retry",
    "resolve",
    "normalize",
    "encode",
    "decode",
    "schedule",
    "notify",
    "refund",
]
NOUNS = [
    "date",
    "amount",
    "header",
    "token",
    "row",
    "record",
    "total",
    "currency",
    "timezone",
    "path",
    "url",
    "limit",
    "batch",
    "cursor",
    "offset",
    "locale",
    "discount",
    "tax",
]
PITFALLS = [
    "the fixture reused a module-level cache, so the second test saw stale data",
    "naive datetimes compared with aware ones raised TypeError only on CI",
    "an off-by-one in the slice dropped the last {noun}",
    "the mock hid that {verb}_{noun}() is called twice; use a real fake",
    "rounding with float lost a cent; Decimal with ROUND_HALF_EVEN fixed it",
    "the {area} settings were read at import time, before the test set them",
]
CHARS = CHARS_PER_TOKEN


def fake_experience(rng: random.Random, n: int) -> tuple[Experience, str]:
    area, verb, noun = rng.choice(AREAS), rng.choice(VERBS), rng.choice(NOUNS)
    symbol = f"{verb}_{noun}"
    module = f"src/{area}/{noun}s.py"
    fill = {"area": area, "verb": verb, "noun": noun}
    exp = Experience(
        title=f"{verb} {noun} in {area} {n}",
        date=f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}",
        project="bench",
        event=rng.choice(["fail-fix-pass", "remember", "stack-change: pyproject.toml"]),
        tags=[area, noun, rng.choice(["bug", "refactor", "tests", "deps"])],
        files=[module, f"tests/{area}/test_{noun}s.py"],
        symbols=[symbol, f"{area.title()}{noun.title()}"],
        goal=f"Make {symbol}() handle every {noun} the {area} module receives.",
        steps=[f"ran tests/{area}", f"read {module}", f"fixed {symbol}()", "suite passes"],
        decisions=[f"keep {symbol}() pure - callers cache its result"],
        pitfalls=[rng.choice(PITFALLS).format(**fill)],
        open_questions=[f"should {area} reject an empty {noun}?"],
    )
    return exp, exp.title


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    rank = math.ceil(pct / 100 * len(ordered))  # nearest rank
    return ordered[max(0, min(len(ordered), rank) - 1)]


def bench_index(root: Path, files: int, queries: int) -> dict[str, object]:
    layout = Layout(root)
    layout.memory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    made: list[tuple[Experience, str]] = []
    start = time.perf_counter()
    for n in range(files):
        exp, topic = fake_experience(rng, n)
        made.append((exp, write_experience(layout.memory, exp, topic).name))
    write_s = time.perf_counter() - start
    index = MemoryIndex(layout.index, layout.memory)
    warnings: list[str] = []
    build = timed(lambda: index.sync(warnings))
    noop = [timed(lambda: index.sync(warnings)) for _ in range(5)]
    for n, path in enumerate(sorted(layout.memory.glob("*--*.md"))[:10]):
        path.write_text(path.read_text() + f"\n- touched {n}\n")
    touched = timed(lambda: index.sync(warnings))
    search_s: list[float] = []
    recall_s: list[float] = []
    hits_at_5 = 0
    words: list[int] = []
    for _ in range(queries):
        target, name = made[rng.randrange(len(made))]
        query = (
            f"{target.symbols[0]}() returns the wrong {target.tags[1]} in {target.files[0]} "
            f"({target.tags[2]})"
        )
        terms = query_terms(query)
        start = time.perf_counter()
        found = index.search(terms, warnings)
        search_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        recalled = recall(index, query, warnings)
        recall_s.append(time.perf_counter() - start)
        words.append(recalled.words)
        hits_at_5 += name in recalled.paths
        del found
    unrelated = recall(index, "add a --verbose flag to the command line interface", warnings)
    return {
        "files": files,
        "write_files_s": round(write_s, 2),
        "index_build_s": round(build, 3),
        "sync_no_change_ms": round(statistics.median(noop) * 1000, 1),
        "sync_10_changed_ms": round(touched * 1000, 1),
        "index_mb": round(layout.index.stat().st_size / 1e6, 2),
        "search_median_ms": round(statistics.median(search_s) * 1000, 2),
        "search_p95_ms": round(percentile(search_s, 95) * 1000, 2),
        "recall_with_sync_median_ms": round(statistics.median(recall_s) * 1000, 1),
        "recall_with_sync_p95_ms": round(percentile(recall_s, 95) * 1000, 1),
        "queries": queries,
        "target_in_recalled_5": f"{hits_at_5}/{queries}",
        "recalled_words_median": statistics.median(words),
        "recalled_words_max": max(words),
        "unrelated_query_recalled": len(unrelated.paths),
        "warnings": warnings[:5],
    }


class Recorder:
    """A scripted model that answers once and keeps what it was sent."""

    def __init__(self) -> None:
        self.model = ScriptedModel([ModelReply(content="Nothing to change.")])

    @property
    def system(self) -> str:
        return self.model.calls[0][0].content or ""


async def run_task(root: Path, task: Task) -> tuple[str, str]:
    """The system prompt a task is sent, and the same prompt without memory's block."""
    recorder = Recorder()
    settings = Settings.model_validate({"model": {"name": "bench"}})
    session = Session(root, settings, recorder.model)
    quiet = TerminalChannel(out=io.StringIO())
    await session.run_task(task, quiet)
    await session.aclose()
    profile = recorder.system.split("Project: ", 1)[1].split("\n## Starting context")[0]
    bare = system_prompt(session.root, profile.rstrip("\n"))
    return recorder.system, bare


def tokens(text: str) -> int:
    return len(text) // CHARS


async def bench_tokens(tmp: Path, big_memory: Path | None) -> dict[str, object]:
    out: dict[str, object] = {}
    blank = tmp / "blank"
    blank.mkdir()
    (blank / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    task = Task(kind=TaskKind.TASK, instruction="make greet() say hello", path="app.py")
    sent, bare = await run_task(blank, task)
    out["blank_project_tokens_added"] = tokens(sent) - tokens(bare)

    rich = tmp / "rich"
    rich.mkdir()
    (rich / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    agents = "\n".join(
        f"- Rule {n}: keep functions under 40 lines (reason {n})." for n in range(30)
    )
    (rich / "AGENTS.md").write_text(f"# Rules\n{agents}\n")
    state = rich / ".agent-lsp" / "state" / "project"
    state.mkdir(parents=True)
    (state / "conventions.md").write_text(
        "\n".join(
            f"- Convention {n}: snake_case for module {n} (reason: PEP 8)." for n in range(10)
        )
    )
    memory = rich / ".agent-lsp" / "memory"
    memory.mkdir(parents=True)
    if big_memory is not None:
        for path in big_memory.glob("*--*.md"):
            (memory / path.name).write_bytes(path.read_bytes())
    rng = random.Random(3)
    for n in range(5):
        exp, topic = fake_experience(rng, 90_000 + n)
        exp.symbols.append("greet")
        exp.files.append("app.py")
        exp.title = f"greet wording {n}"
        write_experience(memory, exp, topic)
    sent, bare = await run_task(rich, task)
    block = sent[len(bare) :]
    recalled = block.split("### Experience from earlier tasks")[1].split("\nBefore your first")[0]
    out["rich_project_tokens_added"] = tokens(sent) - tokens(bare)
    out["of_which_rules_tokens"] = tokens(block.split("### Project state")[0])
    out["of_which_experience_tokens"] = tokens(recalled)
    out["experience_words"] = len(recalled.split("\n", 1)[1].split())

    layout = Layout(rich)
    start_task(layout, "make greet() say hello")
    write_task_section(layout.task_file, "progress", "read app.py; greet() builds 'hi ' + name")
    write_task_section(layout.task_file, "next", "edit app.py line 2, run the tests")
    facts = TaskFacts(goal="make greet() say hello", focus="app.py")
    report = await InitRunner(layout, facts, TerminalChannel(out=io.StringIO())).run("compaction")
    out["rebuild_after_compaction_tokens"] = tokens(report.context)
    return out


async def distill_prompt_tokens(tmp: Path) -> int:
    """Prompt tokens of the one distillation call after the demo's fail -> fix -> pass."""
    project = copy_sample(tmp / "demo")
    base = demo_model()
    seen: list[int] = []

    class Spy:
        async def complete(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> ModelReply:
            if not tools:
                seen.append(sum(len(m.content or "") for m in messages) // CHARS)
            return await base.complete(messages, tools)

    session = Session(project, Settings.model_validate({"model": {"name": "b"}}), Spy())
    await session.run_task(
        Task(kind=TaskKind.TASK, instruction=TASK), TerminalChannel(out=io.StringIO())
    )
    await session.aclose()
    return seen[0] if seen else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agent-lsp-memory-bench-") as tmp_name:
        tmp = Path(tmp_name)
        big = tmp / "big"
        index = bench_index(big, args.files, args.queries)
        prompt = asyncio.run(bench_tokens(tmp, big / ".agent-lsp" / "memory"))
        prompt["distill_call_prompt_tokens"] = asyncio.run(distill_prompt_tokens(tmp))
    result = {
        "machine": f"{platform.machine()} {platform.python_version()}",
        "index": index,
        "prompt": prompt,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "memory.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
