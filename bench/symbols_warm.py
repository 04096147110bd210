"""Cold, warm and one-file-change figures of the symbol index against universal-ctags, in one run.

Used by `symbols_bench.py` (and runnable alone: `python bench/symbols_warm.py`). On the copied
tree (its files dated an hour back, as a checked-out tree is: files written in the last seconds
are re-checked by digest on every start), each round runs, in a rotating order:

- ctags: `ctags -R -f - --languages=Python <tree> > /dev/null`;
- cold, serial: a fresh `SymbolIndex(tree).refresh()` in this process, no cache;
- cold, pool: the same through a fresh `ProcessExtractor` (one worker process per core for the
  build, started and shut down inside the build; their CPU counted);
- cold, previous version: `SymbolIndex(tree).refresh()` of the code at `--baseline` (a
  `git archive` copy), timed inside a subprocess (its interpreter start left out);
- warm: a fresh `SymbolIndex(tree, cache=...)` whose cache a previous build saved: walk, stat,
  load; and the same followed by `totals()` (the first query that reads every file's identifier
  counts, which a warm start unpacks lazily).

Then, on a warm index: `refresh()` after one file changed on disk (median of `--incremental-runs`).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(ROOT))

from agent_lsp.symbols import SymbolIndex  # noqa: E402
from agent_lsp.symbols.cache import cache_path  # noqa: E402
from agent_lsp.symbols.worker import ProcessExtractor  # noqa: E402

BIG = 1 << 30
SKIP = {"site-packages"}
HOUR_NS = 3600 * 1_000_000_000
BASELINE_SCRIPT = """
import sys, time
from pathlib import Path
from agent_lsp.symbols import SymbolIndex
index = SymbolIndex(Path(sys.argv[1]), max_file_bytes=1 << 30, skip_dirs={"site-packages"})
cpu, start = time.process_time(), time.perf_counter()
index.refresh()
print(time.perf_counter() - start, time.process_time() - cpu, len(index))
"""


def children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def settle(tree: Path) -> None:
    for directory, _, names in os.walk(tree):
        for name in names:
            path = Path(directory, name)
            info = path.stat()
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - HOUR_NS))


def baseline_copy(revision: str, target: Path) -> Path | None:
    """The code at `revision` (a `git archive` of this checkout), or None without git."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "agent_lsp"],
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def index(tree: Path, **options: Any) -> SymbolIndex:
    return SymbolIndex(tree, max_file_bytes=BIG, skip_dirs=SKIP, **options)


def cold_serial(tree: Path) -> tuple[float, float]:
    built = index(tree)
    cpu, start = time.process_time(), time.perf_counter()
    built.refresh()
    return time.perf_counter() - start, time.process_time() - cpu


def cold_pool(tree: Path) -> tuple[float, float]:
    children, cpu, start = children_cpu(), time.process_time(), time.perf_counter()
    with ProcessExtractor() as extractor:
        built = index(tree, extractor=extractor)
        built.refresh()
        wall = time.perf_counter() - start
    assert built.parsed == len(built)
    return wall, time.process_time() - cpu + children_cpu() - children


def cold_baseline(tree: Path, code: Path) -> tuple[float, float]:
    environment = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", BASELINE_SCRIPT, str(tree)],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
        cwd=code,
    )
    wall, cpu, _ = done.stdout.split()
    return float(wall), float(cpu)


def warm(tree: Path, query: bool) -> tuple[float, float]:
    cpu, start = time.process_time(), time.perf_counter()
    loaded = index(tree, cache=cache_path(tree))
    loaded.refresh()
    if query:
        loaded.totals()
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    assert loaded.parsed == 0, f"a warm start parsed {loaded.parsed} files"
    return wall, used


def ctags_run(ctags: str, tree: Path) -> tuple[float, float]:
    cpu, start = children_cpu(), time.perf_counter()
    subprocess.run(
        [ctags, "-R", "-f", "-", "--languages=Python", str(tree)],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start, children_cpu() - cpu


def one_file_change(tree: Path, changed: Path, runs: int) -> dict[str, Any]:
    loaded = index(tree, cache=cache_path(tree))
    loaded.refresh()
    original = changed.read_text()
    samples: list[float] = []
    for n in range(runs):
        changed.write_text(f"{original}\n\ndef _bench_disk_{n}(x):\n    return x\n")
        parsed = loaded.parsed
        start = time.perf_counter()
        count = loaded.refresh()
        samples.append(time.perf_counter() - start)
        assert (count, loaded.parsed - parsed) == (1, 1), "not exactly one file re-parsed"
    changed.write_text(original)
    loaded.refresh()
    loaded.close()
    return {"median_s": statistics.median(samples), "samples_s": samples}


def bench(
    tree: Path, ctags: str | None, rounds: int, baseline: str | None, runs: int, changed: Path
) -> dict[str, Any]:
    settle(tree)
    seed = index(tree, cache=cache_path(tree))
    seed.refresh()  # saves the cache the warm figures load
    seed.close()
    del seed
    with tempfile.TemporaryDirectory(prefix="symbols-baseline-") as temp:
        code = baseline_copy(baseline, Path(temp)) if baseline else None
        steps: dict[str, Any] = {
            "cold, serial": lambda: cold_serial(tree),
            "cold, pool": lambda: cold_pool(tree),
            "warm": lambda: warm(tree, query=False),
            "warm + totals()": lambda: warm(tree, query=True),
        }
        if ctags:
            steps["ctags"] = lambda: ctags_run(ctags, tree)
        if code is not None:
            steps[f"cold, {baseline}"] = lambda: cold_baseline(tree, code)
        wall: dict[str, list[float]] = {name: [] for name in steps}
        cpu: dict[str, list[float]] = {name: [] for name in steps}
        names = list(steps)
        for round_number in range(rounds):
            order = names[round_number % len(names) :] + names[: round_number % len(names)]
            for name in order:
                measured = steps[name]()
                wall[name].append(measured[0])
                cpu[name].append(measured[1])
            print(
                f"cold/warm round {round_number + 1}: "
                + ", ".join(f"{n} {wall[n][-1] * 1000:.0f} ms" for n in names),
                flush=True,
            )
    figures: dict[str, Any] = {
        name: {
            "median_s": statistics.median(wall[name]),
            "cpu_median_s": statistics.median(cpu[name]),
            "samples_s": wall[name],
            "cpu_samples_s": cpu[name],
        }
        for name in names
    }
    if ctags:
        base = figures["ctags"]
        for row in figures.values():
            row["ratio_to_ctags"] = row["median_s"] / base["median_s"]
            row["cpu_ratio_to_ctags"] = row["cpu_median_s"] / base["cpu_median_s"]
    return {
        "rounds": rounds,
        "builds": figures,
        "one_file_change": one_file_change(tree, changed, runs),
        "loadavg_after": os.getloadavg(),
    }


def report(results: dict[str, Any]) -> list[str]:
    out = [
        f"cold / warm (median of {results['rounds']} rotated rounds)",
        f"  {'':34}{'wall':>8}{'ratio':>8}{'CPU':>10}{'ratio':>8}",
    ]
    for name, row in results["builds"].items():
        ratio = f"{row['ratio_to_ctags']:.2f}x" if "ratio_to_ctags" in row else ""
        cpu_ratio = f"{row['cpu_ratio_to_ctags']:.2f}x" if "cpu_ratio_to_ctags" in row else ""
        out.append(
            f"  {name:34}{row['median_s'] * 1000:6.0f} ms{ratio:>8}"
            f"{row['cpu_median_s'] * 1000:8.0f} ms{cpu_ratio:>8}"
        )
    change = results["one_file_change"]
    out.append(
        f"  one file changed on disk, refresh() (median of {len(change['samples_s'])}): "
        f"{change['median_s'] * 1000:.1f} ms"
    )
    return out


def main() -> int:
    import argparse
    import shutil
    import sysconfig

    from symbols_bench import copy_tree, find_ctags

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default="db7ed13", help="git revision for 'previous'")
    parser.add_argument("--incremental-runs", type=int, default=20)
    parser.add_argument("--changed", default="argparse.py")
    args = parser.parse_args()
    found = find_ctags()
    with tempfile.TemporaryDirectory(prefix="symbols-warm-") as temp:
        tree = Path(temp) / "stdlib"
        files, lines, size = copy_tree(args.source, tree)
        print(f"tree: copy of {args.source}: {files} files, {lines:,} lines, {size / 1e6:.1f} MB")
        results = bench(
            tree,
            found[0] if found else None,
            args.rounds,
            args.baseline,
            args.incremental_runs,
            tree / args.changed,
        )
        shutil.rmtree(tree / ".agent-lsp", ignore_errors=True)
    print("\n".join(report(results)))
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
