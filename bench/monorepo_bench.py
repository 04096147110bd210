"""Monorepo benchmark: a targeted run (the tests of one changed source file, run by the package
that owns it) vs the full run (every package), side by side on a generated Python monorepo.

    .venv/bin/python bench/monorepo_bench.py [--packages 4] [--files 25] [--rounds 5]

The project: ``services/pNN/`` packages, each a pyproject.toml with a pytest table, a module
per test file and ``--files`` test files of 4 tests each (one failing test in the last
package). The arms alternate (1 warm-up round, then ``--rounds``); wall time from the call to
the report, median and min of each, and the report totals of each arm.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters import PosixShell, detect_toolchain, tests_for_source  # noqa: E402
from adapters.results import TestReport  # noqa: E402


def generate(root: Path, packages: int, files: int) -> None:
    for p in range(packages):
        pkg = root / "services" / f"p{p:02}"
        (pkg / f"p{p:02}").mkdir(parents=True)
        (pkg / "tests").mkdir()
        (pkg / "pyproject.toml").write_text(
            f'[project]\nname = "p{p:02}"\n\n[tool.pytest.ini_options]\n'
            'testpaths = ["tests"]\npythonpath = ["."]\n'
        )
        (pkg / f"p{p:02}" / "__init__.py").write_text("")
        for f in range(files):
            (pkg / f"p{p:02}" / f"mod{f:03}.py").write_text(f"def value():\n    return {f}\n")
            bad = p == packages - 1 and f == 0
            tests = "".join(
                f"def test_{n}() -> None:\n"
                f"    assert value() + {n} == {f + n + int(bad and n == 0)}\n\n"
                for n in range(4)
            )
            (pkg / "tests" / f"test_mod{f:03}.py").write_text(
                f"from p{p:02}.mod{f:03} import value\n\n\n{tests}"
            )


async def timed(root: Path, targets: list[str]) -> tuple[float, TestReport]:
    adapter = detect_toolchain(root)
    assert adapter is not None
    start = time.monotonic()
    report = await adapter.run(root, root, targets, shell=PosixShell(), timeout=600)
    return time.monotonic() - start, report


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packages", type=int, default=4)
    parser.add_argument("--files", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    with tempfile.TemporaryDirectory(prefix="monorepo-bench-") as tmp:
        root = Path(tmp)
        generate(root, args.packages, args.files)
        changed = "services/p01/p01/mod007.py"
        targets = tests_for_source(root, changed)
        print(f"changed {changed} -> targets {targets}")
        times: dict[str, list[float]] = {"targeted": [], "full": []}
        reports: dict[str, TestReport] = {}
        for round_ in range(args.rounds + 1):
            for arm, arm_targets in (("targeted", targets), ("full", [])):
                seconds, reports[arm] = await timed(root, arm_targets)
                if round_:
                    times[arm].append(seconds)
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; rounds {args.rounds}")
        for arm, values in times.items():
            r = reports[arm]
            print(
                f"{arm:9} median {statistics.median(values):6.2f}s  min {min(values):6.2f}s  "
                f"{r.runner}: {r.summary()}"
            )
        ratio = statistics.median(times["full"]) / statistics.median(times["targeted"])
        print(f"full / targeted (medians): {ratio:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
