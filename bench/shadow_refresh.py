"""Shadow workspace refresh on 10,000 files, side by side in one run with references: the
shadow of an older commit (its ``adapters/shadow.py`` from ``git archive``: a full walk each
time), this shadow without its change feed (``watch=False``: the fallback walk), ``find
-printf`` stat'ing the source and the shadow (the syscall floor of a walk) and ``cp -al``.

    .venv/bin/python bench/shadow_refresh.py [--base e25704e] [--rounds 15]

Each round times, in turn: a refresh with nothing changed of this shadow, of the base's and of
the walk, both references; a refresh after a "test run" (3 files added, 1 changed, a folder
made in each shadow) of the three; a refresh after an edit of one source file (rewritten in
place) of the three. The shadows' files are compared with the source's at the end. Medians
and minima (the least disturbed run: on a shared machine the closest to what the code costs);
results in bench/results/shadow-refresh-*.json.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.shadow import ShadowWorkspace  # noqa: E402

RESULTS = ROOT / "bench" / "results"


class Shadow(Protocol):
    def sync(self, overlays: dict[str, str]) -> Path: ...


def base_shadow_class(commit: str, into: Path) -> Callable[[Path, Path], Shadow]:
    """`ShadowWorkspace` of `commit`, imported from a `git archive` of its adapters/shadow.py."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "adapters/shadow.py"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    spec = importlib.util.spec_from_file_location(f"shadow_{commit}", into / "adapters/shadow.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ShadowWorkspace


def make_tree(root: Path, dirs: int = 200, files_per_dir: int = 50) -> int:
    """dirs x files_per_dir small files in two levels, a node_modules of 50 packages, a .venv."""
    for d in range(dirs):
        folder = root / f"pkg{d // 20}" / f"mod{d}"
        folder.mkdir(parents=True)
        for f in range(files_per_dir):
            (folder / f"file{f}.py").write_text(f"x = {d * files_per_dir + f}\n")
    for p in range(50):
        (root / "node_modules" / f"package-{p}").mkdir(parents=True)
    (root / ".venv").mkdir()
    (root / ".venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    return dirs * files_per_dir


def a_test_run(dest: Path, n: int) -> None:
    """What a test run leaves in a shadow: new files, a changed copy, a new folder."""
    for i in range(3):
        (dest / f"pkg0/mod0/out{n}_{i}.tmp").write_text("stray")
    (dest / "pkg1/mod20/file1.py").write_text(f"changed {n}\n")
    (dest / f"build{n}").mkdir()


def an_edit(source: Path, n: int) -> None:
    """The user saving one file: rewritten in place, the same size."""
    path = source / "pkg3/mod77/file7.py"
    with path.open("r+b") as handle:
        handle.write(f"x={n % 10}".encode())


def files_of(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*.py")
        if p.is_file() and not p.is_symlink()
    }


def timed(samples: dict[str, list[float]], label: str, action: Callable[[], object]) -> None:
    start = time.perf_counter()
    action()
    samples.setdefault(label, []).append(time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--base", default="e25704e", help="commit of the reference shadow.py")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="agent-lsp-shadow-refresh-"))
    try:
        old_class = base_shadow_class(args.base, base / "base")
        source = base / "project"
        files = make_tree(source)
        new, old = ShadowWorkspace(source, base / "new"), old_class(source, base / "old")
        walk = ShadowWorkspace(source, base / "walk", watch=False)
        first = time.perf_counter()
        new.sync({})
        first_sync_ms = (time.perf_counter() - first) * 1000
        old.sync({})
        walk.sync({})
        find = ["find", str(source), str(base / "new"), "-printf", "%s %T@\n"]
        samples: dict[str, list[float]] = {}
        for n in range(args.rounds):
            timed(samples, "refresh, nothing changed", lambda: new.sync({}))
            timed(samples, f"refresh, nothing changed ({args.base})", lambda: old.sync({}))
            timed(samples, "refresh, nothing changed (walk)", lambda: walk.sync({}))
            timed(samples, "find -printf of source + shadow", lambda: _quiet(find))
            copy = ["cp", "-al", str(source), str(base / f"cp-al-{n}")]
            timed(samples, "cp -al of the tree", functools.partial(_quiet, copy))
            shutil.rmtree(copy[-1])
            a_test_run(base / "new", n)
            a_test_run(base / "old", n)
            a_test_run(base / "walk", n)
            timed(samples, "refresh after a test run", lambda: new.sync({}))
            timed(samples, f"refresh after a test run ({args.base})", lambda: old.sync({}))
            timed(samples, "refresh after a test run (walk)", lambda: walk.sync({}))
            an_edit(source, n)
            timed(samples, "refresh after a saved file", lambda: new.sync({}))
            timed(samples, f"refresh after a saved file ({args.base})", lambda: old.sync({}))
            timed(samples, "refresh after a saved file (walk)", lambda: walk.sync({}))
        expected = files_of(source)
        same = {name: files_of(base / name) == expected for name in ("new", "old", "walk")}
        medians = {label: statistics.median(values) * 1000 for label, values in samples.items()}
        minima = {label: min(values) * 1000 for label, values in samples.items()}
        load = os.getloadavg()
        result: dict[str, Any] = {
            "files": files,
            "rounds": args.rounds,
            "watching": new.feed.watching,
            "first_sync_ms": round(first_sync_ms, 1),
            "shadow_equals_source": same,
            "load_average": [round(x, 2) for x in load],
            "cpus": os.cpu_count(),
            "median_ms": {label: round(ms, 1) for label, ms in medians.items()},
            "min_ms": {label: round(ms, 1) for label, ms in minima.items()},
            "ratios": {
                f"vs {args.base}, nothing changed": _ratio(
                    medians, "refresh, nothing changed", f"refresh, nothing changed ({args.base})"
                ),
                f"vs {args.base}, after a test run": _ratio(
                    medians, "refresh after a test run", f"refresh after a test run ({args.base})"
                ),
                f"vs {args.base}, after a saved file": _ratio(
                    medians,
                    "refresh after a saved file",
                    f"refresh after a saved file ({args.base})",
                ),
                "walk vs find -printf": _ratio(
                    medians, "refresh, nothing changed (walk)", "find -printf of source + shadow"
                ),
                "vs find -printf": _ratio(
                    medians, "refresh, nothing changed", "find -printf of source + shadow"
                ),
                "vs cp -al": _ratio(medians, "refresh, nothing changed", "cp -al of the tree"),
            },
        }
        print(
            f"  first sync (copy + watches): {first_sync_ms:.0f} ms; watching: {new.feed.watching}"
        )
        print(f"  shadow files equal the source's: {same}")
        for label, ms in medians.items():
            print(f"  {label}: {ms:.1f} ms (min {minima[label]:.1f} ms)")
        for label, ratio in result["ratios"].items():
            print(f"  ratio {label}: {ratio}")
        print(f"  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cpus")
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"shadow-refresh-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"results: {out}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def _quiet(command: list[str]) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def _ratio(medians: dict[str, float], ours: str, other: str) -> float:
    return round(medians[ours] / medians[other], 3)


if __name__ == "__main__":
    sys.exit(main())
