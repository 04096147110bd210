"""Benchmark the symbol index against universal-ctags on a large real tree.

The tree is a copy of this interpreter's standard library (its .py/.pyi files, without
site-packages or __pycache__), made in a temp directory so that nothing outside it is touched and
the incremental figures can modify files. On that copy:

- full build: `SymbolIndex(tree).refresh()` in a fresh index, with tree-sitter and with the regex
  fallback, against `ctags -R -f - --languages=Python <tree> > /dev/null`; medians and the ratio;
- incremental: `update_file()` of one changed file (the editor-buffer path: one parse) and
  `refresh()` after that file changed on disk (walk + stat of the whole tree, one parse);
  medians of 20;
- no-op `refresh()` (nothing changed: the walk and stats alone) and the queries
  `definitions()` / `references()` on the built index.

Run: `.venv/bin/python bench/symbols_bench.py` (about a minute on 2 cores); the figures go to
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
import time
import tracemalloc
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from agent_lsp.symbols import SymbolIndex  # noqa: E402
from agent_lsp.symbols.model import Engine  # noqa: E402

RESULTS_PATH = BENCH_DIR / "results" / "symbols.json"
SUFFIXES = (".py", ".pyi")
BIG = 1 << 30  # no file-size limit here: ctags has none either


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


def traced_heap(tree: Path) -> dict[str, float]:
    """Python heap held by a tree-sitter index of the tree (tracemalloc), and the build's peak."""
    tracemalloc.start()
    index = build(tree, "tree-sitter")
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del index
    return {"live": current / 2**20, "peak": peak / 2**20}


def build(tree: Path, engine: Engine) -> SymbolIndex:
    index = SymbolIndex(tree, engine=engine, max_file_bytes=BIG, skip_dirs={"site-packages"})
    index.refresh()
    return index


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
    parser.add_argument("--output", type=Path, default=RESULTS_PATH)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="symbols-bench-") as temp:
        tree = Path(temp) / "stdlib"
        files, lines, size = copy_tree(args.source, tree)
        print(f"tree: copy of {args.source}: {files} files, {lines:,} lines, {size / 1e6:.1f} MB")
        found_ctags = find_ctags()
        rss_before = rss_mib()
        # rounds interleave ctags and both engines, so load from other processes hits all alike
        names = ("ctags", "tree-sitter", "regex", "parse")
        samples: dict[str, list[float]] = {name: [] for name in names}  # wall seconds
        cpu: dict[str, list[float]] = {name: [] for name in names}  # CPU seconds
        indexes: dict[str, SymbolIndex] = {}

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
            print(
                f"round {round_number + 1}: "
                + ", ".join(
                    f"{name} {values[-1]:.2f} s (CPU {cpu[name][-1]:.2f} s)"
                    for name, values in samples.items()
                    if values
                )
            )
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
        heap = traced_heap(tree)
        index = indexes["tree-sitter"]
        incremental = bench_incremental(index, tree / args.changed, args.incremental_runs)
        queries = bench_queries(index)

    results: dict[str, Any] = {
        "tree": {"source": str(args.source), "files": files, "lines": lines, "bytes": size},
        "ctags": ctags,
        "build": builds,
        "incremental": incremental,
        "queries": queries,
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
    runs = len(inc["update_file"]["samples_s"])
    out.append(f"incremental, {inc['file']} ({inc['file_lines']:,} lines), median of {runs}")
    for key in ("update_file", "refresh_after_disk_change", "refresh_nothing_changed"):
        out.append(f"  {key:<27} {inc[key]['median_s'] * 1000:9.1f} ms")
    heap = results["index_heap_mib"]
    out.append(
        f"index memory (tracemalloc): {heap['live']:.0f} MiB live, "
        f"build peak {heap['peak']:.0f} MiB"
    )
    rss = results["rss_mib"]
    if rss["before_builds"] and rss["with_tree_sitter_index"]:
        grown = rss["with_tree_sitter_index"] - rss["before_builds"]
        out.append(f"RSS growth of the benchmark process after the builds: {grown:.0f} MiB")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
