"""Cold, warm and one-file-change figures of the symbol index against universal-ctags, in one run.

Used by `symbols_bench.py` (and runnable alone: `python bench/symbols_warm.py`). On the copied
tree (its files dated an hour back, as a checked-out tree is: files written in the last seconds
are re-checked by digest on every start), each round runs, in a rotating order:

- ctags: `ctags -R -f - --languages=Python <tree> > /dev/null`;
- cold, serial: a fresh `SymbolIndex(tree).refresh()` in this process, no cache;
- cold, pool: the same through a fresh `ProcessExtractor` (one worker process per core for the
  build, started and shut down inside the build; their CPU counted); and again with the cache a
  session keeps, saved at the end of the build (what a session's first start pays);
- cold, serial, tree-sitter: the serial build with Python parsed by tree-sitter, as it was
  before the scanner;
- cold, previous version: `SymbolIndex(tree).refresh()` of the code at `--baseline` (a
  `git archive` copy), timed inside a subprocess (its interpreter start left out); and its warm
  start from its own cache file (alone, and with a first `definitions()` query);
- warm: a fresh `SymbolIndex(tree, cache=...)` whose cache a previous build saved: walk, stat,
  load; the same followed by a first `definitions()` query (which unpacks the name table and
  the definitions of the files it reads), and by `totals()` (the first query that reads every
  file's identifier counts; a warm start unpacks all of those lazily).

Then, on a warm index, one file changed on disk (median of `--incremental-runs`): `refresh()`,
`refresh_paths([it])` (the change known), and the baseline's `refresh()`.
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
cache = Path(sys.argv[2]) if len(sys.argv) > 2 else None
index = SymbolIndex(
    Path(sys.argv[1]), max_file_bytes=1 << 30, skip_dirs={"site-packages"}, cache=cache
)
cpu, start = time.process_time(), time.perf_counter()
index.refresh()
if len(sys.argv) > 3:
    index.definitions(sys.argv[3])
print(time.perf_counter() - start, time.process_time() - cpu, index.parsed)
"""
BASELINE_CHANGE_SCRIPT = """
import statistics, sys, time
from pathlib import Path
from agent_lsp.symbols import SymbolIndex
tree, changed, runs = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
index = SymbolIndex(tree, max_file_bytes=1 << 30, skip_dirs={"site-packages"})
index.refresh()
original = changed.read_text()
samples, cpus = [], []
for n in range(runs):
    changed.write_text(f"{original}\\n\\ndef _bench_base_{n}(x):\\n    return x\\n")
    parsed = index.parsed
    cpu, start = time.process_time(), time.perf_counter()
    count = index.refresh()
    samples.append(time.perf_counter() - start)
    cpus.append(time.process_time() - cpu)
    assert (count, index.parsed - parsed) == (1, 1)
changed.write_text(original)
print(statistics.median(samples), statistics.median(cpus))
"""
QUERY = "ArgumentParser"  # the first query of a warm start: `definitions(QUERY)`


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


def cold_tree_sitter(tree: Path) -> tuple[float, float]:
    """`cold_serial` with every file parsed by tree-sitter (Python's engine before the scanner)."""
    built = index(tree, engine="tree-sitter")
    cpu, start = time.process_time(), time.perf_counter()
    built.refresh()
    return time.perf_counter() - start, time.process_time() - cpu


def cold_pool(tree: Path, saved: bool = False) -> tuple[float, float]:
    """A cold build through a fresh `ProcessExtractor`'s pool; `saved`: with the cache a session
    keeps, written at the end of the build (a session's first start), from no cache file."""
    cache = cache_path(tree).with_name("symbols-cold.bin") if saved else None
    if cache is not None:
        cache.unlink(missing_ok=True)
    children, cpu, start = children_cpu(), time.process_time(), time.perf_counter()
    with ProcessExtractor() as extractor:
        built = index(tree, extractor=extractor, cache=cache)
        built.refresh()
        wall = time.perf_counter() - start
    assert built.parsed == len(built)
    assert cache is None or cache.stat().st_size > 0
    return wall, time.process_time() - cpu + children_cpu() - children


def cold_baseline(tree: Path, code: Path, *warm: str, seed: bool = False) -> tuple[float, float]:
    """The baseline's build (with `warm`: cache path[, query], its warm start; `seed`: the
    build that saves that cache), in a child."""
    environment = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", BASELINE_SCRIPT, str(tree), *warm],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
        cwd=code,
    )
    wall, cpu, parsed = done.stdout.split()
    assert seed or not warm or parsed == "0", f"the baseline's warm start parsed {parsed}"
    return float(wall), float(cpu)


def base_cache(tree: Path) -> Path:
    """The baseline's own cache file (another format: the two must not overwrite each other)."""
    return cache_path(tree).with_name("symbols-baseline.bin")


def warm(tree: Path, query: str) -> tuple[float, float]:
    cpu, start = time.process_time(), time.perf_counter()
    loaded = index(tree, cache=cache_path(tree))
    loaded.refresh()
    if query == "definitions":
        loaded.definitions(QUERY)
    elif query == "totals":
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


def one_file_change(
    tree: Path, changed: Path, runs: int, code: Path | None = None
) -> dict[str, Any]:
    """On a warm index, `argparse.py` rewritten on disk `runs` times, each followed by:
    `refresh()` (the walk finds it), `refresh_paths([it])` (the change is known: an editor's
    save, a watcher), or `refresh()` after `refresh_paths` (what a query then pays); plus
    `refresh()` with nothing changed and, with `code`, the baseline's `refresh()`."""
    loaded = index(tree, cache=cache_path(tree))
    loaded.refresh()
    original = changed.read_text()
    samples: dict[str, list[float]] = {"refresh()": [], "refresh_paths()": [], "then": []}
    cpus: dict[str, list[float]] = {name: [] for name in samples}
    for n in range(runs):
        for way in ("refresh()", "refresh_paths()"):
            tag = "walk" if way == "refresh()" else "known"
            changed.write_text(f"{original}\n\ndef _bench_{tag}_{n}(x):\n    return x\n")
            parsed = loaded.parsed
            cpu, start = time.process_time(), time.perf_counter()
            count = loaded.refresh() if way == "refresh()" else loaded.refresh_paths([changed])
            samples[way].append(time.perf_counter() - start)
            cpus[way].append(time.process_time() - cpu)
            assert (count, loaded.parsed - parsed) == (1, 1), "not exactly one file re-parsed"
        cpu, start = time.process_time(), time.perf_counter()
        assert loaded.refresh() == 0
        samples["then"].append(time.perf_counter() - start)
        cpus["then"].append(time.process_time() - cpu)
    changed.write_text(original)
    loaded.refresh()
    loaded.close()
    figures = {name: statistics.median(values) for name, values in samples.items()}
    cpu_figures = {name: statistics.median(values) for name, values in cpus.items()}
    if code is not None:
        done = subprocess.run(
            [sys.executable, "-c", BASELINE_CHANGE_SCRIPT, str(tree), str(changed), str(runs)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(code)},
            cwd=code,
        )
        wall, used = done.stdout.split()
        figures["baseline refresh()"], cpu_figures["baseline refresh()"] = float(wall), float(used)
    return {"median_s": figures, "cpu_median_s": cpu_figures, "samples_s": samples, "runs": runs}


def bench(
    tree: Path,
    ctags: str | None,
    rounds: int,
    baseline: str | None,
    runs: int,
    changed: Path,
    cold: bool = True,
    cold_only: bool = False,
) -> dict[str, Any]:
    settle(tree)
    seed = index(tree, cache=cache_path(tree))
    seed.refresh()  # saves the cache the warm figures load
    seed.close()
    del seed
    with tempfile.TemporaryDirectory(prefix="symbols-baseline-") as temp:
        code = baseline_copy(baseline, Path(temp)) if baseline else None
        if code is not None:
            cold_baseline(tree, code, str(base_cache(tree)), seed=True)  # its cache
        steps: dict[str, Any] = {
            "cold, serial": lambda: cold_serial(tree),
            "cold, pool": lambda: cold_pool(tree),
            "cold, pool + save": lambda: cold_pool(tree, saved=True),
            "cold, serial, tree-sitter": lambda: cold_tree_sitter(tree),
            "warm": lambda: warm(tree, query=""),
            f"warm + definitions({QUERY})": lambda: warm(tree, query="definitions"),
            "warm + totals()": lambda: warm(tree, query="totals"),
        }
        if ctags:
            steps["ctags"] = lambda: ctags_run(ctags, tree)
        if code is not None:
            steps[f"cold, {baseline}"] = lambda: cold_baseline(tree, code)
        if not cold:  # `--no-cold`: the warm figures alone (a cold build is ~15x ctags)
            steps = {name: step for name, step in steps.items() if not name.startswith("cold")}
        if cold_only:  # `--cold-only`: ctags and this checkout's cold builds, nothing else
            steps = {
                name: step
                for name, step in steps.items()
                if name in ("ctags", "cold, serial", "cold, pool", "cold, pool + save")
            }
        if code is not None:
            steps[f"warm, {baseline}"] = lambda: cold_baseline(tree, code, str(base_cache(tree)))
            steps[f"warm + definitions(), {baseline}"] = lambda: cold_baseline(
                tree, code, str(base_cache(tree)), QUERY
            )
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
        change = one_file_change(tree, changed, runs, code)
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
        "one_file_change": change,
        "baseline": baseline,
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
    medians = change["median_s"]
    out.append(f"one file changed on disk, warm index (median of {change['runs']})")
    labels = {
        "refresh()": "refresh() (the walk finds it)",
        "refresh_paths()": "refresh_paths([it]) (a known change)",
        "then": "then refresh() (nothing left)",
        "baseline refresh()": f"refresh(), {results.get('baseline')}",
    }
    cpu = change.get("cpu_median_s", {})
    for name, label in labels.items():
        if name in medians:
            used = f"{cpu[name] * 1000:7.1f} ms CPU" if name in cpu else ""
            out.append(f"  {label:40}{medians[name] * 1000:7.1f} ms {used}")
    return out


def change_only(tree: Path, runs: int, baseline: str | None, changed: Path) -> dict[str, Any]:
    """The one-file-change figures alone (`--change-only`), on a warm index."""
    settle(tree)
    seed = index(tree, cache=cache_path(tree))
    seed.refresh()
    seed.close()
    with tempfile.TemporaryDirectory(prefix="symbols-baseline-") as temp:
        code = baseline_copy(baseline, Path(temp)) if baseline else None
        return {
            "rounds": 0,
            "builds": {},
            "one_file_change": one_file_change(tree, changed, runs, code),
            "baseline": baseline,
            "loadavg_after": os.getloadavg(),
        }


def main() -> int:
    import argparse
    import shutil
    import sysconfig

    from symbols_bench import copy_tree, find_ctags

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default="b2fb9e2", help="git revision for 'previous'")
    parser.add_argument("--incremental-runs", type=int, default=20)
    parser.add_argument("--changed", default="argparse.py")
    parser.add_argument("--change-only", action="store_true", help="only the one-file figures")
    parser.add_argument("--no-cold", action="store_true", help="leave the cold builds out")
    parser.add_argument(
        "--cold-only", action="store_true", help="only ctags and this checkout's cold builds"
    )
    args = parser.parse_args()
    found = find_ctags()
    with tempfile.TemporaryDirectory(prefix="symbols-warm-") as temp:
        tree = Path(temp) / "stdlib"
        files, lines, size = copy_tree(args.source, tree)
        print(f"tree: copy of {args.source}: {files} files, {lines:,} lines, {size / 1e6:.1f} MB")
        if args.change_only:
            results = change_only(tree, args.incremental_runs, args.baseline, tree / args.changed)
        else:
            results = bench(
                tree,
                found[0] if found else None,
                args.rounds,
                None if args.cold_only else args.baseline,
                args.incremental_runs,
                tree / args.changed,
                cold=not args.no_cold,
                cold_only=args.cold_only,
            )
        shutil.rmtree(tree / ".agent-lsp", ignore_errors=True)
    print("\n".join(report(results)))
    print(f"load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
