"""Benchmark the symbol index against universal-ctags on a large real tree.

The tree is a copy of this interpreter's standard library (its .py/.pyi files, without
site-packages or __pycache__), made in a temp directory so that nothing outside it is touched and
the incremental figures can modify files. On that copy:

- full build: `SymbolIndex(tree).refresh()` in a fresh index, with tree-sitter and with the regex
  fallback, against `ctags -R -f - --languages=Python <tree> > /dev/null`; medians and the ratio;
- incremental: `update_file()` of one changed file (the editor-buffer path: one parse) and
  `refresh()` after that file changed on disk (walk + stat of the whole tree, one parse);
  medians of 20;
- cold / warm / one-file change (`symbols_warm.py`): a fresh build serially, through the process
  pool and with the code of `--baseline` (7ebaa2d), a warm start from the persisted index, and
  `refresh()` after one file changed, against ctags in the same rotated rounds
  (`--cold-warm-only` stops after them);
- no-op `refresh()` (nothing changed: the walk and stats alone) and the queries
  `definitions()` / `references()` on the built index;
- extraction in a child process (`ProcessExtractor`): the full build through it (in the rounds
  above, child start included), and what a main thread ticking every 0.2 ms sees while a worker
  thread extracts the 20,000-line buffer of `lsp_workloads.generate_python(20000)` or builds the
  whole index, in-process and through the child: the longest gap between its ticks (how long
  the event loop of a language server would be kept off the CPU) and the wall time.

Run: `.venv/bin/python bench/symbols_bench.py` (about 1.5 minutes on 2 cores); the figures go to
stdout and `bench/results/symbols.json`. Needs `ctags` (universal-ctags) on PATH for the
comparison; without it the ctags rows are left out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

import symbols_warm  # noqa: E402
from lsp_workloads import generate_python  # noqa: E402

from agent_lsp.symbols import SymbolIndex, extract  # noqa: E402
from agent_lsp.symbols.entries import Extractor  # noqa: E402
from agent_lsp.symbols.model import Engine  # noqa: E402
from agent_lsp.symbols.worker import ProcessExtractor  # noqa: E402

RESULTS_PATH = BENCH_DIR / "results" / "symbols.json"
SUFFIXES = (".py", ".pyi")
BIG = 1 << 30  # no file-size limit here: ctags has none either
BUFFER_LINES = 20_000
TICK_S = 0.0002


def copy_tree(source: Path, target: Path) -> tuple[int, int, int]:
    """Copy the Python sources of `source` (no site-packages, no caches); (files, lines, bytes)."""
    files = lines = size = 0
    for directory, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "__pycache__"))
        for name in sorted(filenames):
            if not name.endswith(SUFFIXES):
                continue
            src = Path(directory, name)
            dst = target / src.relative_to(source)
            dst.parent.mkdir(parents=True, exist_ok=True)
            data = src.read_bytes()
            dst.write_bytes(data)
            files += 1
            lines += data.count(b"\n")
            size += len(data)
    return files, lines, size


def timed(action: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def timed_cpu(action: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of `action` in this process."""
    gc.collect()
    cpu, start = time.process_time(), time.perf_counter()
    action()
    return time.perf_counter() - start, time.process_time() - cpu


def summary(samples: list[float], cpu: list[float] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
        "samples_s": samples,
    }
    if cpu:
        result.update(cpu_median_s=statistics.median(cpu), cpu_samples_s=cpu)
    return result


def rss_mib() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def traced_heap(tree: Path, extractor: Extractor | None = None) -> dict[str, float]:
    """Python heap held by a tree-sitter index of the tree (tracemalloc), and the build's peak."""
    tracemalloc.start()
    index = build(tree, "tree-sitter", extractor)
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del index
    return {"live": current / 2**20, "peak": peak / 2**20}


def build(tree: Path, engine: Engine, extractor: Extractor | None = None) -> SymbolIndex:
    index = SymbolIndex(
        tree, engine=engine, max_file_bytes=BIG, skip_dirs={"site-packages"}, extractor=extractor
    )
    index.refresh()
    return index


def build_in_child(tree: Path, indexes: dict[str, SymbolIndex]) -> tuple[float, float, float]:
    """(wall, CPU of both processes, CPU of this one) of a tree-sitter build through a fresh
    `ProcessExtractor`: its child starts on the first batch and is stopped (and so counted in
    RUSAGE_CHILDREN) afterwards."""
    gc.collect()
    children, cpu, start = children_cpu(), time.process_time(), time.perf_counter()
    with ProcessExtractor() as extractor:
        indexes["child process"] = build(tree, "tree-sitter", extractor)
        wall, own = time.perf_counter() - start, time.process_time() - cpu
    return wall, own + children_cpu() - children, own


def ticking(action: Callable[[], object]) -> tuple[float, float, float]:
    """Run `action` in a worker thread while this thread sleeps 0.2 ms at a time: (wall seconds
    of `action`, longest gap in seconds between two of this thread's ticks meanwhile, longest
    pause of the garbage collector meanwhile)."""
    done = threading.Event()
    wall: list[float] = []
    pauses = [0.0]
    started = [0.0]

    def collecting(phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            started[0] = now
        else:
            pauses.append(now - started[0])

    def work() -> None:
        start = time.perf_counter()
        try:
            action()
        finally:
            wall.append(time.perf_counter() - start)
            done.set()

    gc.collect()
    worker = threading.Thread(target=work)
    gc.callbacks.append(collecting)
    longest, last = 0.0, time.perf_counter()
    worker.start()
    while not done.is_set():
        time.sleep(TICK_S)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    gc.callbacks.remove(collecting)
    return wall[0], longest, max(pauses)


def idle_gap(seconds: float) -> float:
    """The longest gap between ticks with nothing else running: the floor of `ticking`."""
    return ticking(lambda: time.sleep(seconds))[1]


def gap_summary(measured: list[tuple[float, float, float]]) -> dict[str, Any]:
    walls, gaps, pauses = ([m[i] for m in measured] for i in range(3))
    return {
        "wall_median_s": statistics.median(walls),
        "gap_median_s": statistics.median(gaps),
        "gap_max_s": max(gaps),
        "gc_pause_max_s": max(pauses),
        "wall_samples_s": walls,
        "gap_samples_s": gaps,
    }


def bench_blocking(tree: Path, runs: int) -> dict[str, Any]:
    """Event-loop gaps while a worker thread extracts the big buffer (`runs` times each way,
    alternating) and while it builds the whole index (once each way)."""
    buffer = generate_python(BUFFER_LINES)
    with ProcessExtractor() as extractor:
        first = ticking(lambda: extractor(buffer, "python"))  # starts the child
        assert extractor(buffer, "python") == extract(buffer, "python"), "results differ"
        in_process: list[tuple[float, float, float]] = []
        in_child: list[tuple[float, float, float]] = []
        for _ in range(runs):
            in_process.append(ticking(lambda: extract(buffer, "python")))
            in_child.append(ticking(lambda: extractor(buffer, "python")))
        assert extractor.crashes == 0 and extractor.served == runs + 2, "the child did not serve"
    with ProcessExtractor() as extractor:
        child_build = ticking(lambda: build(tree, "tree-sitter", extractor))
    plain_build = ticking(lambda: build(tree, "tree-sitter"))
    return {
        "tick_s": TICK_S,
        "idle_gap_s": idle_gap(0.5),
        "buffer": {
            "lines": BUFFER_LINES,
            "bytes": len(buffer.encode()),
            "in_process": gap_summary(in_process),
            "child_process": gap_summary(in_child),
            "child_process_first_call": gap_summary([first]),
        },
        "build": {
            "in_process": gap_summary([plain_build]),
            "child_process": gap_summary([child_build]),
        },
    }


def find_ctags() -> tuple[str, str] | None:
    """(path, version line) of universal-ctags, or None."""
    ctags = shutil.which("ctags")
    if ctags is None:
        return None
    version = subprocess.run([ctags, "--version"], capture_output=True, text=True, check=False)
    if "Universal Ctags" not in version.stdout:
        return None
    return ctags, version.stdout.splitlines()[0]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ctags(ctags: str, tree: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one ctags run."""
    cpu, start = children_cpu(), time.perf_counter()
    subprocess.run(
        [ctags, "-R", "-f", "-", "--languages=Python", str(tree)],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start, children_cpu() - cpu


def ctags_totals(ctags: str, tree: Path) -> list[str]:
    done = subprocess.run(
        [ctags, "-R", "-f", "-", "--languages=Python", "--totals=yes", str(tree)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    return done.stderr.strip().splitlines()


def parse_only(tree: Path) -> tuple[float, float] | None:
    """Seconds tree-sitter alone takes to parse every file (texts read beforehand): the floor
    of the tree-sitter engine."""
    try:
        import tree_sitter
        import tree_sitter_python
    except ImportError:
        return None
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
    texts = [p.read_bytes() for p in sorted(tree.rglob("*.py*"))]
    return timed_cpu(lambda: [len(parser.parse(text).root_node.children) for text in texts])


def bench_incremental(index: SymbolIndex, changed: Path, runs: int) -> dict[str, Any]:
    original = changed.read_text()
    buffer_samples: list[float] = []
    for n in range(runs):
        text = f"{original}\n\ndef _bench_added_{n}(x):\n    return x + {n}\n"
        buffer_samples.append(timed(lambda text=text: index.update_file(changed, text)))
    assert index.definitions(f"_bench_added_{runs - 1}"), "the buffer was not indexed"
    index.close_file(changed)
    disk_samples: list[float] = []
    counts: list[int] = []
    for n in range(runs):
        changed.write_text(f"{original}\n\ndef _bench_disk_{n}(x):\n    return x\n")
        disk_samples.append(timed(lambda: counts.append(index.refresh())))
    assert set(counts) == {1}, f"refresh re-parsed {counts} files, expected 1 each time"
    changed.write_text(original)
    index.refresh()
    noop = [timed(index.refresh) for _ in range(5)]
    return {
        "file": changed.name,
        "file_lines": original.count("\n"),
        "file_bytes": len(original.encode()),
        "update_file": summary(buffer_samples),
        "refresh_after_disk_change": summary(disk_samples),
        "refresh_nothing_changed": summary(noop),
    }


def bench_queries(index: SymbolIndex) -> dict[str, Any]:
    names = ["ArgumentParser", "join", "TestCase", "encode", "does_not_exist"]
    rows: dict[str, Any] = {}
    for name in names:
        definitions = index.definitions(name)
        rows[name] = {
            "definitions": len(definitions),
            "definitions_s": timed(lambda name=name: index.definitions(name)),
            "references_30_s": timed(lambda name=name: index.references(name, 30)),
        }
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--runs", type=int, default=3, help="rounds of full builds")
    parser.add_argument("--incremental-runs", type=int, default=20)
    parser.add_argument("--changed", default="argparse.py", help="file changed incrementally")
    parser.add_argument("--gap-runs", type=int, default=9, help="extractions of the big buffer")
    parser.add_argument("--output", type=Path, default=RESULTS_PATH)
    parser.add_argument("--warm-rounds", type=int, default=5, help="rounds of cold/warm figures")
    parser.add_argument("--baseline", default="7ebaa2d", help="git revision of 'previous'")
    parser.add_argument(
        "--cold-warm-only", action="store_true", help="only the cold / warm / one-file figures"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="symbols-bench-") as temp:
        tree = Path(temp) / "stdlib"
        files, lines, size = copy_tree(args.source, tree)
        print(f"tree: copy of {args.source}: {files} files, {lines:,} lines, {size / 1e6:.1f} MB")
        found_ctags = find_ctags()
        cold_warm = symbols_warm.bench(
            tree,
            found_ctags[0] if found_ctags else None,
            args.warm_rounds,
            args.baseline,
            args.incremental_runs,
            tree / args.changed,
        )
        shutil.rmtree(tree / ".agent-lsp", ignore_errors=True)
        print("\n".join(symbols_warm.report(cold_warm)))
        if args.cold_warm_only:
            output = args.output.with_name("symbols_warm.json")
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(json.dumps(cold_warm, indent=2) + "\n")
            print(f"load average: {os.getloadavg()}\nwritten: {output}")
            return 0
        rss_before = rss_mib()
        # rounds interleave ctags and both engines, so load from other processes hits all alike
        names = ("ctags", "tree-sitter", "regex", "parse", "child process")
        samples: dict[str, list[float]] = {name: [] for name in names}  # wall seconds
        cpu: dict[str, list[float]] = {name: [] for name in names}  # CPU seconds
        indexes: dict[str, SymbolIndex] = {}
        own_cpu: list[float] = []  # of this process alone, in the child-process builds

        def note(name: str, measured: tuple[float, float]) -> None:
            samples[name].append(measured[0])
            cpu[name].append(measured[1])

        for round_number in range(args.runs):
            if found_ctags:
                note("ctags", run_ctags(found_ctags[0], tree))
            for engine in ("tree-sitter", "regex"):
                indexes.pop(engine, None)
                note(
                    engine,
                    timed_cpu(lambda engine=engine: indexes.update({engine: build(tree, engine)})),
                )
            if (parsed := parse_only(tree)) is not None:
                note("parse", parsed)
            indexes.pop("child process", None)
            wall, total_cpu, own = build_in_child(tree, indexes)
            note("child process", (wall, total_cpu))
            own_cpu.append(own)
            print(
                f"round {round_number + 1}: "
                + ", ".join(
                    f"{name} {values[-1]:.2f} s (CPU {cpu[name][-1]:.2f} s)"
                    for name, values in samples.items()
                    if values
                )
            )
        identical = indexes.pop("child process").files() == indexes["tree-sitter"].files()
        del indexes["regex"]
        gc.collect()
        rss_after = rss_mib()
        ctags: dict[str, Any] | None = None
        if found_ctags:
            ctags = {
                "version": found_ctags[1],
                "command": "ctags -R -f - --languages=Python <tree> > /dev/null",
                "totals": ctags_totals(found_ctags[0], tree),
                **summary(samples["ctags"], cpu["ctags"]),
            }
        builds: dict[str, Any] = {}
        for engine in ("tree-sitter", "regex"):
            index = indexes.get(engine) or build(tree, engine)
            builds[engine] = {
                "files": len(index),
                "definitions": sum(len(f.symbols.definitions) for f in index.files()),
                "engine": index.describe(),
                **summary(samples[engine], cpu[engine]),
            }
            if ctags:
                row = builds[engine]
                row["ratio_to_ctags"] = row["median_s"] / ctags["median_s"]
                row["cpu_ratio_to_ctags"] = row["cpu_median_s"] / ctags["cpu_median_s"]
        if samples["parse"]:
            builds["tree-sitter"]["parse_only"] = summary(samples["parse"], cpu["parse"])
        builds["tree-sitter"]["child_process"] = {
            "identical_to_in_process": identical,
            "this_process_cpu_median_s": statistics.median(own_cpu),
            **summary(samples["child process"], cpu["child process"]),
        }
        heap = traced_heap(tree)
        with ProcessExtractor() as extractor:
            heap["live_child_process"] = traced_heap(tree, extractor)["live"]
        index = indexes["tree-sitter"]
        incremental = bench_incremental(index, tree / args.changed, args.incremental_runs)
        queries = bench_queries(index)
        del index
        indexes.clear()  # the gaps below are measured with no other index in memory
        blocking = bench_blocking(tree, args.gap_runs)

    results: dict[str, Any] = {
        "tree": {"source": str(args.source), "files": files, "lines": lines, "bytes": size},
        "ctags": ctags,
        "cold_warm": cold_warm,
        "build": builds,
        "incremental": incremental,
        "queries": queries,
        "blocking": blocking,
        "rss_mib": {"before_builds": rss_before, "with_tree_sitter_index": rss_after},
        "index_heap_mib": heap,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
            "tree_sitter": _version("tree-sitter"),
            "tree_sitter_python": _version("tree-sitter-python"),
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(report(results))
    print(f"\nwritten: {args.output}")
    return 0


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def report(results: dict[str, Any]) -> str:
    tree, ctags, builds, inc = (
        results["tree"],
        results["ctags"],
        results["build"],
        results["incremental"],
    )
    out = [
        f"\nfull build, {tree['files']} files / {tree['lines']:,} lines "
        f"/ {tree['bytes'] / 1e6:.1f} MB (median)",
    ]
    out[:0] = ["", *symbols_warm.report(results["cold_warm"])]
    out.append(f"  {'':<27}{'wall':>9}  {'ratio':>6}  {'CPU':>9}  {'ratio':>6}")

    def row(label: str, figures: dict[str, Any]) -> str:
        line = f"  {label:<27}{figures['median_s'] * 1000:6.0f} ms"
        if ctags:
            line += f"  {figures['median_s'] / ctags['median_s']:5.2f}x"
        line += f"  {figures['cpu_median_s'] * 1000:6.0f} ms"
        if ctags:
            line += f"  {figures['cpu_median_s'] / ctags['cpu_median_s']:5.2f}x"
        return line

    if ctags:
        out.append(row("universal-ctags", ctags))
    for engine, figures in builds.items():
        out.append(row(f"SymbolIndex ({engine})", figures))
        if "parse_only" in figures:
            out.append(row("  tree-sitter parse alone", figures["parse_only"]))
        if "child_process" in figures:
            child = figures["child_process"]
            same = "same" if child["identical_to_in_process"] else "DIFFERENT"
            out.append(
                row("  in a child process", child)
                + f"  (this process {child['this_process_cpu_median_s'] * 1000:.0f} ms; "
                f"{same} symbols)"
            )
    runs = len(inc["update_file"]["samples_s"])
    out.append(f"incremental, {inc['file']} ({inc['file_lines']:,} lines), median of {runs}")
    for key in ("update_file", "refresh_after_disk_change", "refresh_nothing_changed"):
        out.append(f"  {key:<27} {inc[key]['median_s'] * 1000:9.1f} ms")
    out.extend(report_blocking(results["blocking"]))
    heap = results["index_heap_mib"]
    out.append(
        f"index memory (tracemalloc): {heap['live']:.0f} MiB live, "
        f"build peak {heap['peak']:.0f} MiB; built in a child process: "
        f"{heap['live_child_process']:.0f} MiB live"
    )
    rss = results["rss_mib"]
    if rss["before_builds"] and rss["with_tree_sitter_index"]:
        grown = rss["with_tree_sitter_index"] - rss["before_builds"]
        out.append(f"RSS growth of the benchmark process after the builds: {grown:.0f} MiB")
    return "\n".join(out)


def report_blocking(blocking: dict[str, Any]) -> list[str]:
    buffer = blocking["buffer"]
    runs = len(buffer["in_process"]["gap_samples_s"])
    out = [
        f"blocking: longest gap between the ticks of a main thread sleeping "
        f"{blocking['tick_s'] * 1000:.1f} ms at a time, while a worker thread extracts",
        f"  {'':<40}{'gap':>9}  {'worst':>9}  {'GC pause':>9}  {'wall':>9}",
        f"  {'nothing (idle)':<40}{blocking['idle_gap_s'] * 1000:6.1f} ms",
    ]

    def row(label: str, figures: dict[str, Any]) -> str:
        return (
            f"  {label:<40}{figures['gap_median_s'] * 1000:6.1f} ms"
            f"  {figures['gap_max_s'] * 1000:6.1f} ms"
            f"  {figures['gc_pause_max_s'] * 1000:6.1f} ms"
            f"  {figures['wall_median_s'] * 1000:6.0f} ms"
        )

    lines, size = buffer["lines"], buffer["bytes"] / 1e3
    out.append(f"  {lines:,}-line buffer ({size:.0f} KB), median of {runs}")
    out.append(row("  in-process", buffer["in_process"]))
    out.append(row("  child process", buffer["child_process"]))
    out.append(row("  child process, first call (starts it)", buffer["child_process_first_call"]))
    out.append("  full build of the tree, once")
    out.append(row("  in-process", blocking["build"]["in_process"]))
    out.append(row("  child process (starts it)", blocking["build"]["child_process"]))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
