"""`agent-lsp test` vs each real project's own test command, run alternately on one machine.

    .venv/bin/python bench/real_projects.py CLONES [--repeats 2] [--only NAME ...] [--out FILE]

``CLONES`` holds one clone per project, named as below (itsdangerous, attrs, more-itertools,
ufo, commander.js, match-sorter, uuid; the second round's markupsafe, pluggy, humanize,
structlog, defu, pathe, ms, go-cmp), with its test dependencies installed: ``npm install``
in the JavaScript ones, and a virtualenv per Python project in ``CLONES/venvs/<name>`` (see
bench/real_projects.md for the installs). Each round runs the project's own command, then
``agent-lsp test --json --root <clone>`` (the arms alternate, so both see the same load); the
wall time of each is taken from the process start to its exit. The own command's counts are
read from its closing lines, agent-lsp's from its JSON report. Prints one JSON line per run and
a table at the end; ``--out`` keeps the runs as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT_LSP = ROOT / ".venv" / "bin" / "agent-lsp"

Counts = dict[str, int]


def _num(pattern: str, text: str) -> int:
    found = re.findall(pattern, text)
    return int(found[-1]) if found else 0


def pytest_counts(out: str) -> Counts:
    line = next(
        (ln for ln in reversed(out.splitlines()) if re.search(r"\d+ (passed|failed)", ln)), ""
    )
    return {
        "passed": _num(r"(\d+) passed", line),
        "failed": _num(r"(\d+) failed", line),
        "errors": _num(r"(\d+) errors?\b", line),
        "skipped": _num(r"(\d+) skipped", line),
    }


def unittest_counts(out: str) -> Counts:
    ran = _num(r"Ran (\d+) tests?", out)
    tail = out[out.rfind("Ran ") :]
    failed = _num(r"failures=(\d+)", tail)
    errors = _num(r"errors=(\d+)", tail)
    skipped = _num(r"skipped=(\d+)", tail)
    expected = _num(r"expected failures=(\d+)", tail)
    return {
        "passed": ran - failed - errors - skipped - expected,
        "failed": failed,
        "errors": errors,
        "skipped": skipped + expected,
    }


def vitest_counts(out: str) -> Counts:
    clean = re.sub(r"\x1b\[[0-9;]*m", "", out)
    line = next((ln for ln in clean.splitlines() if re.match(r"\s*Tests\s+\d", ln)), "")
    return {
        "passed": _num(r"(\d+) passed", line),
        "failed": _num(r"(\d+) failed", line),
        "errors": _num(r"(\d+) errors?", clean[clean.rfind("Test Files") :]),
        "skipped": _num(r"(\d+) skipped", line) + _num(r"(\d+) todo", line),
    }


def jest_counts(out: str) -> Counts:
    line = next((ln for ln in out.splitlines() if ln.startswith("Tests:")), "")
    return {
        "passed": _num(r"(\d+) passed", line),
        "failed": _num(r"(\d+) failed", line),
        "errors": 0,
        "skipped": _num(r"(\d+) skipped", line) + _num(r"(\d+) todo", line),
    }


def node_test_counts(out: str) -> Counts:
    text = out.replace("\N{INFORMATION SOURCE}", "#")  # the spec reporter's lines
    return {
        "passed": _num(r"# pass (\d+)", text),
        "failed": _num(r"# fail (\d+)", text),
        "errors": _num(r"# cancelled (\d+)", text),
        "skipped": _num(r"# skipped (\d+)", text) + _num(r"# todo (\d+)", text),
    }


def go_counts(out: str) -> Counts:
    return {
        "passed": len(re.findall(r"^\s*--- PASS", out, re.M)),
        "failed": len(re.findall(r"^\s*--- FAIL", out, re.M)),
        "errors": len(re.findall(r"^FAIL\s+\S+\s+\[", out, re.M)),  # build failed
        "skipped": len(re.findall(r"^\s*--- SKIP", out, re.M)),
    }


@dataclass(frozen=True)
class Project:
    name: str
    repo: str
    runner: str
    own: str  # the project's own command, run with sh -c in the clone
    counts: Callable[[str], Counts]
    python: bool = False


PROJECTS = (
    Project(
        "itsdangerous",
        "pallets/itsdangerous",
        "pytest",
        "pytest -v --tb=short",
        pytest_counts,
        python=True,
    ),
    Project("attrs", "python-attrs/attrs", "pytest", "pytest -n auto", pytest_counts, python=True),
    Project(
        "more-itertools",
        "more-itertools/more-itertools",
        "unittest",
        "python -m unittest -v",
        unittest_counts,
        python=True,
    ),
    Project("ufo", "unjs/ufo", "vitest", "npx vitest run --typecheck", vitest_counts),
    Project(
        "commander.js",
        "tj/commander.js",
        "node --test (tests.command)",
        "node --test",
        node_test_counts,
    ),
    Project(
        "match-sorter", "kentcdodds/match-sorter", "jest (kcd-scripts)", "npm test", jest_counts
    ),
    Project("uuid", "google/uuid", "go test", "go test -count=1 -v ./...", go_counts),
    # the second round (bench/real_projects.md, "Second round")
    Project("markupsafe", "pallets/markupsafe", "pytest", "pytest", pytest_counts, python=True),
    Project("pluggy", "pytest-dev/pluggy", "pytest (tox.ini)", "pytest", pytest_counts, True),
    Project("humanize", "python-humanize/humanize", "pytest", "pytest", pytest_counts, True),
    Project("structlog", "hynek/structlog", "pytest", "pytest", pytest_counts, python=True),
    Project("defu", "unjs/defu", "vitest", "npx vitest run", vitest_counts),
    Project("pathe", "unjs/pathe", "vitest (vite.config.ts)", "npx vitest run", vitest_counts),
    Project("ms", "vercel/ms", "jest + ts-jest", "npx jest --env node", jest_counts),
    Project("go-cmp", "google/go-cmp", "go test", "go test -count=1 -v -race ./...", go_counts),
)


def environment(clones: Path, project: Project) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_LSP_", "PYTEST_"))}
    env.pop("VIRTUAL_ENV", None)
    env["CI"] = "true"  # wrappers (kcd-scripts) would watch otherwise
    if project.python:
        venv = clones / "venvs" / project.name
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=900,
        check=False,
    )
    return time.perf_counter() - started, done.returncode, done.stdout + "\n" + done.stderr


def run_own(clones: Path, project: Project) -> dict[str, object]:
    root = clones / project.name
    seconds, code, out = timed(["sh", "-c", project.own], root, environment(clones, project))
    return {"arm": "own", "seconds": round(seconds, 2), "exit": code, **project.counts(out)}


def run_agent_lsp(clones: Path, project: Project) -> dict[str, object]:
    root = clones / project.name
    argv = [str(AGENT_LSP), "test", "--json", "--root", str(root)]
    seconds, code, out = timed(argv, root, environment(clones, project))
    line = next((ln for ln in reversed(out.splitlines()) if ln.startswith("{")), "{}")
    report = json.loads(line)
    totals = report.get("totals") or {}
    return {
        "arm": "agent-lsp",
        "seconds": round(seconds, 2),
        "exit": code,
        **{key: totals.get(key, 0) for key in ("passed", "failed", "errors", "skipped")},
        "runner": report.get("runner"),
        "failing": [f"{t['path']}:{t['line']}" for t in report.get("tests", [])][:5],
        "error": report.get("error"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("clones", type=Path)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    clones = args.clones.resolve()
    rows: list[tuple[Project, list[dict[str, object]]]] = []
    for project in PROJECTS:
        if args.only and project.name not in args.only:
            continue
        commit = subprocess.run(
            ["git", "-C", str(clones / project.name), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        runs: list[dict[str, object]] = []
        for round_ in range(args.repeats):
            for arm in (run_own, run_agent_lsp):
                before = load()
                record = {
                    "project": project.name,
                    "commit": commit,
                    "round": round_,
                    "load": before,
                    **arm(clones, project),
                }
                runs.append(record)
                print(json.dumps(record), flush=True)
                if args.out:
                    with args.out.open("a", encoding="utf-8") as out:
                        out.write(json.dumps(record) + "\n")
        rows.append((project, runs))
    print()
    print("| project | runner | own p/f/e/s | own s | agent-lsp p/f/e/s | agent-lsp s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for project, runs in rows:
        own = [r for r in runs if r["arm"] == "own"]
        ours = [r for r in runs if r["arm"] == "agent-lsp"]

        def pfes(r: dict[str, object]) -> str:
            return "/".join(str(r[k]) for k in ("passed", "failed", "errors", "skipped"))

        own_s = statistics.median(float(r["seconds"]) for r in own)  # type: ignore[arg-type]
        our_s = statistics.median(float(r["seconds"]) for r in ours)  # type: ignore[arg-type]
        ratios = [float(b["seconds"]) / float(a["seconds"]) for a, b in zip(own, ours, strict=True)]  # type: ignore[arg-type]
        print(
            f"| {project.name} | {project.runner} | {pfes(own[-1])} | {own_s:.2f} | "
            f"{pfes(ours[-1])} | {our_s:.2f} | {statistics.median(ratios):.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
