"""jest with the adapter's worker choice vs ``--runInBand``, side by side in one run.

Usage: PYTHONPATH=. python bench/jest_workers.py [--rounds N]

Copies tests/fixtures/js-jest with its ``many`` variant (six files of 1.2 s of CPU work each)
into a temp folder twice, links the fixture's cached node_modules (run the adapter tests once
first, or ``npm install`` is run here), and times ``JestRunner`` on the plain project (our worker
choice) and on a copy whose ``scripts.test`` is ``jest --runInBand``. Rounds alternate so that
machine load falls on both. Prints a table with the load average; timings are not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters import JestRunner, PosixShell
from tests.adapters.conftest import (
    _install,  # pyright: ignore[reportPrivateUsage]
    copy_fixture,
    link_node_modules,
)


async def _time(root: Path) -> tuple[float, int, int]:
    report = await JestRunner().run(root, root, [], shell=PosixShell(), timeout=300)
    processes = len(set(re.findall(r"pid=(\d+)", report.output)))
    return report.duration, report.passed + report.failed, processes


async def main() -> None:
    parser = argparse.ArgumentParser(description="jest: our worker choice vs --runInBand")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cache = _install("js-jest")
    with tempfile.TemporaryDirectory(prefix="jest-workers-") as tmp:
        ours = copy_fixture("js-jest", Path(tmp) / "ours", "many")
        band = copy_fixture("js-jest", Path(tmp) / "band", "many", "in-band")
        for root in (ours, band):
            link_node_modules(cache, root)
        times: dict[str, list[float]] = {"ours (worker choice)": [], "--runInBand": []}
        info: dict[str, tuple[int, int]] = {}
        for _ in range(args.rounds):
            for name, root in zip(times, (ours, band), strict=True):
                seconds, tests, processes = await _time(root)
                times[name].append(seconds)
                info[name] = (tests, processes)
        print(f"CPUs: {os.cpu_count()}, load average: {os.getloadavg()}")
        print(f"{'run':<22} {'tests':>5} {'processes':>9} {'median s':>9} {'all runs s':>24}")
        for name, values in times.items():
            tests, processes = info[name]
            runs = ", ".join(f"{v:.1f}" for v in values)
            print(
                f"{name:<22} {tests:>5} {processes:>9} {statistics.median(values):>9.1f} {runs:>24}"
            )


if __name__ == "__main__":
    asyncio.run(main())
