"""Adapter benchmarks: (a) targeted vs full-suite runs on a real project, (b) shadow workspace
creation and incremental refresh on a generated tree of >= 10,000 files.

    .venv/bin/python bench/adapters_bench.py            # both, results in bench/results/
    .venv/bin/python bench/adapters_bench.py shadow     # only (b)
    .venv/bin/python bench/adapters_bench.py targeted --project DIR --target ID ...
    .venv/bin/python bench/adapters_bench.py real DIR   # profile + one full run of any project

Without --project, (a) downloads the more-itertools sdist (929 unittest tests) from PyPI with
pip into bench/results/cache/ (git-ignored) and runs it with the interpreter running this.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters import (  # noqa: E402
    PosixShell,
    ShadowWorkspace,
    describe_project,
    detect_toolchain,
    tests_for_source,
)

RESULTS = ROOT / "bench" / "results"
SDIST = "more-itertools==11.2.1"
DEFAULT_TARGETS = ("tests/test_more.py::ChunkedTests", "tests/test_recipes.py")


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def fetch_sdist(spec: str) -> Path:
    """Download and unpack ``spec``'s sdist (once) into bench/results/cache/."""
    cache = RESULTS / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    name = spec.split("==")[0].replace("-", "_")
    found = sorted(cache.glob(f"{name}-*.tar.gz"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-binary",
                ":all:",
                "--no-deps",
                "-q",
                "-d",
                str(cache),
                spec,
            ],
            check=True,
        )
        found = sorted(cache.glob(f"{name}-*.tar.gz"))
    archive = found[-1]
    folder = cache / archive.name.removesuffix(".tar.gz")
    if not folder.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(cache, filter="data")
    return folder


async def _timed_run(root: Path, targets: list[str], timeout: float) -> dict[str, Any]:
    adapter = detect_toolchain(root)
    assert adapter is not None, describe_project(root)
    start = time.monotonic()
    report = await adapter.run(root, root, targets, shell=PosixShell(), timeout=timeout)
    return {
        "wall_s": round(time.monotonic() - start, 3),
        "summary": f"{report.runner}: {report.summary()}",
        "tests": report.passed + report.failed + report.errors + report.skipped,
        "ok": report.ok,
    }


def bench_targeted(project: Path, targets: list[str], repeat: int) -> dict[str, Any]:
    """Full suite vs targeted runs through the detected adapter (median wall times)."""
    changed = "more_itertools/recipes.py"
    affected = tests_for_source(project, changed) if (project / changed).exists() else []
    cases: dict[str, list[str]] = {"full": []}
    cases.update({f"target {t}": [t] for t in targets})
    if affected:
        cases[f"tests_for_source({changed})"] = affected
    out: dict[str, Any] = {"project": str(project), "profile": describe_project(project)}
    runs: dict[str, Any] = {}
    for label, case_targets in cases.items():
        samples = [asyncio.run(_timed_run(project, case_targets, 900)) for _ in range(repeat)]
        runs[label] = {
            "targets": case_targets,
            "median_wall_s": _median([s["wall_s"] for s in samples]),
            "walls_s": [s["wall_s"] for s in samples],
            "summary": samples[-1]["summary"],
            "tests": samples[-1]["tests"],
        }
        print(f"  {label}: {runs[label]['median_wall_s']:.2f}s  {samples[-1]['summary']}")
    full = runs["full"]["median_wall_s"]
    for label, run in runs.items():
        run["speedup_vs_full"] = round(full / run["median_wall_s"], 1) if label != "full" else 1.0
    out["runs"] = runs
    return out


def _generate_tree(root: Path, dirs: int, files_per_dir: int, packages: int) -> int:
    rng = random.Random(7)
    count = 0
    for d in range(dirs):
        folder = root / f"pkg{d // 20}" / f"mod{d}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(files_per_dir):
            size = rng.randint(200, 4000)
            (folder / f"file{f}.py").write_text("x = 1\n" * (size // 6))
            count += 1
    modules = root / "node_modules"
    for p in range(packages):
        pkg = modules / f"package-{p}"
        pkg.mkdir(parents=True)
        for f in range(5):
            (pkg / f"index{f}.js").write_text("module.exports = 1;\n")
    (root / ".venv/lib").mkdir(parents=True)
    (root / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    return count


def _shadow_once(results: dict[str, list[float]], dirs: int, files_per_dir: int) -> int:
    base = Path(tempfile.mkdtemp(prefix="agent-lsp-shadow-bench-"))
    try:
        source = base / "project"
        files = _generate_tree(source, dirs, files_per_dir, packages=300)
        shadow = ShadowWorkspace(source, base / "shadow")

        def record(label: str, overlays: dict[str, str] | None = None) -> None:
            start = time.perf_counter()
            shadow.sync(overlays or {})
            results.setdefault(label, []).append(time.perf_counter() - start)

        record("initial sync")
        record("refresh, nothing changed")
        for path in sorted(source.glob("pkg0/mod*/file1*.py"))[:20]:
            path.write_text(path.read_text() + "y = 2\n")
            os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
        record("refresh, 20 files changed")
        record("refresh with 10 overlays", {f"pkg1/mod20/file{i}.py": "z = 3\n" for i in range(10)})
        for i in range(100):
            (source / f"pkg2/mod40/new{i}.py").write_text("n = 1\n")
        shutil.rmtree(source / "pkg3")
        record("refresh, 100 added + 1 folder removed")
        copy = base / "cp-a"
        start = time.perf_counter()
        subprocess.run(["cp", "-a", str(source), str(copy)], check=False)
        results.setdefault("reference: cp -a of the same tree", []).append(
            time.perf_counter() - start
        )
        return files
    finally:
        shutil.rmtree(base, ignore_errors=True)


def bench_shadow(repeat: int, dirs: int = 200, files_per_dir: int = 60) -> dict[str, Any]:
    """Initial copy and refreshes of a ShadowWorkspace over a generated tree."""
    results: dict[str, list[float]] = {}
    files = 0
    for _ in range(repeat):
        files = _shadow_once(results, dirs, files_per_dir)
    summary = {label: _median(samples) for label, samples in results.items()}
    for label, value in summary.items():
        print(f"  {label}: {value * 1000:.0f} ms")
    return {
        "files": files,
        "node_modules_packages_linked": 300,
        "repeat": repeat,
        "median_s": summary,
        "samples_s": {k: [round(v, 4) for v in vs] for k, vs in results.items()},
    }


def _write(result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"adapters-{time.strftime('%Y%m%d-%H%M%S')}.json"
    result["machine"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
    }
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "what", nargs="?", default="all", choices=["all", "targeted", "shadow", "real"]
    )
    parser.add_argument("dir", nargs="?", help="project folder for `real`")
    parser.add_argument("--project", type=Path, help="project for (a); default: more-itertools")
    parser.add_argument("--target", action="append", help="targeted run (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.what == "real":
        root = Path(args.dir or ".").resolve()
        print(describe_project(root))
        print(json.dumps(asyncio.run(_timed_run(root, [], 1800)), indent=2))
        return 0
    result: dict[str, Any] = {}
    if args.what in ("all", "targeted"):
        project = args.project.resolve() if args.project else fetch_sdist(SDIST)
        print(f"(a) targeted vs full suite on {project.name}")
        result["targeted"] = bench_targeted(
            project, args.target or list(DEFAULT_TARGETS), args.repeat
        )
    if args.what in ("all", "shadow"):
        print("(b) shadow workspace")
        result["shadow"] = bench_shadow(args.repeat)
    print(f"results: {_write(result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
