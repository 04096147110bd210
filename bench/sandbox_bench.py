"""What the OS sandbox costs: commands, the secret scan and a test run, each side by side with
its unsandboxed reference in one run, interleaved. Workspaces are generated under /var/tmp (the
sandbox has a private /tmp). Table on stdout, samples in bench/results/sandbox.json; see
bench/README.md. `.venv/bin/python bench/sandbox_bench.py [--only commands scan tests]`"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters import PosixShell, detect_toolchain  # noqa: E402
from agent_lsp.demo import copy_sample  # noqa: E402
from agent_lsp.loop.verify import Verifier, new_shadow_dir  # noqa: E402
from agent_lsp.project.workspace import Workspace  # noqa: E402
from agent_lsp.safety.confined import ConfinedShell  # noqa: E402
from agent_lsp.safety.homeview import toolchain_dirs  # noqa: E402
from agent_lsp.safety.sandbox import Confinement, Sandbox, probe  # noqa: E402
from agent_lsp.safety.secretscan import SecretScan, _secret_name  # noqa: E402  # pyright: ignore[reportPrivateUsage]
from tests.fakes.channel import RecordingChannel  # noqa: E402

COMMANDS = ("true", "ls", "cat README.md", "git status --short", "python3 -c pass")
KINDS = ("models", "views", "utils", "api", "schema", "tasks", "helpers")
SECRETS = (".env", "config/prod.env", "deploy/.ssh/id_ed25519", "svc/credentials.json", ".npmrc")
Timed = Callable[[], Awaitable[object]]
Samples = dict[str, list[float]]


def p90(values: list[float]) -> float:
    return sorted(values)[math.ceil(0.9 * len(values)) - 1]  # nearest rank


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def make_tree(root: Path, entries: int) -> int:
    """~`entries` files and folders, every name unique (src/pkgNN/modNNN/pkgNN_modNNN_kind.py)
    plus a README, a .gitignore and the `SECRETS`; returns the entry count."""
    for i in range(entries // (len(KINDS) + 1)):
        folder = root / "src" / f"pkg{i % 12:02d}" / f"mod{i // 12:03d}"
        folder.mkdir(parents=True)
        for kind in KINDS:
            name = f"{folder.parent.name}_{folder.name}_{kind}.py"
            (folder / name).write_text(f'"""{name}"""\n\n\ndef {kind}() -> int:\n    return {i}\n')
    (root / "README.md").write_text("# generated project\n\n" + "Some text.\n" * 40)
    (root / ".gitignore").write_text("*.env\n.env\n.ssh/\ncredentials.json\n.npmrc\n")
    for rel in SECRETS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("API_KEY=not-a-real-one\n")
    return sum(len(d) + len(f) for _, d, f in os.walk(root))


async def interleave(
    arms: Mapping[str, Callable[[], object]], runs: int, warmup: int = 2
) -> Samples:
    """Runs every arm (awaited if async) `warmup` + `runs` times, round-robin, the first arm
    rotating; ms."""
    names = list(arms)
    out: Samples = {name: [] for name in names}
    for i in range(warmup + runs):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            if inspect.isawaitable(done := arms[name]()):
                await done
            if i >= warmup:
                out[name].append((time.perf_counter() - start) * 1000)
    return out


def row(label: str, ref: list[float], new: list[float]) -> list[str]:
    # paired differences; a shorter `new` pairs with the first rounds (it ran in those)
    added = [b - a for a, b in zip(ref, new, strict=False)]
    ratio = statistics.median(new) / statistics.median(ref)
    cells = [f"{statistics.median(ref):.1f} / {p90(ref):.1f}"]
    cells += [f"{statistics.median(new):.1f} / {p90(new):.1f}", f"{ratio:.2f}x"]
    return [label, *cells, f"{statistics.median(added):+.1f} / {p90(added):+.1f}"]


def table(first: str, rows: list[list[str]], ref: str = "plain", new: str = "sandboxed") -> None:
    head = [first, f"{ref} med / p90", f"{new} med / p90", "ratio", "added med / p90"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, ["-" * w for w in widths], *rows]:
        cells = [c.rjust(w) for c, w in zip(r, widths, strict=True)]
        print("  ".join([r[0].ljust(widths[0]), *cells[1:]]))
    print()


def make_repo(ws: Path) -> int:
    """The tree as a git repository with one modified file (one line of status)."""
    entries = make_tree(ws, 2_000)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-C", str(ws)]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], check=True)
    (ws / "src/pkg00/mod000/pkg00_mod000_api.py").write_text("changed\n")
    return entries


def script_arm(shell: PosixShell | ConfinedShell, cmd: str, ws: Path, out: list[str]) -> Timed:
    async def go() -> None:
        result = await shell.run_script(cmd, cwd=ws, timeout=60)
        out.append(f"{result.exit_code}:{result.output}")

    return go


async def bench_commands(base: Path, runs: int, results: dict[str, object]) -> None:
    ws = base / "project"
    entries = make_repo(ws)
    plain = PosixShell()
    sandbox = Sandbox(private_base=base / "homes")
    confined = ConfinedShell(sandbox, Confinement(writable=(ws,), visible=(ws,)))
    status = probe()
    floor = [status.bwrap or "bwrap", "--unshare-all", *status.flags, "--die-with-parent"]
    floor += ["--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    floor += ["--tmpfs", "/tmp", "--", *plain.script_argv("true")]
    print(f"commands: {entries} entries in {ws}, {runs} runs each, load {load()}")
    print(f"sandbox: {status.mode}, {status.bwrap}")
    outputs: dict[str, list[str]] = {}
    arms: dict[str, Callable[[], object]] = {}
    for cmd in COMMANDS:  # one rotation over every arm: a burst of load hits all alike
        for name, shell in (("plain", plain), ("sandboxed", confined)):
            arms[f"{cmd}|{name}"] = script_arm(shell, cmd, ws, outputs.setdefault(name + cmd, []))
    arms["floor"] = lambda: plain.run(floor, cwd=ws, timeout=60)  # bash in the smallest bwrap
    argv, env = plain.script_argv("true"), confined.environment()
    arms["Sandbox.wrap"] = lambda: sandbox.wrap(argv, ws, confined.confinement, env)
    arms["toolchain_dirs"] = lambda: toolchain_dirs(sandbox.home, env)
    arms["warm scan"] = sandbox.scanner(ws).scan
    got = await interleave(arms, runs)
    rows: list[list[str]] = []
    for cmd in COMMANDS:
        ref, new = outputs["plain" + cmd], outputs["sandboxed" + cmd]
        alike = sum(x == y for x, y in zip(ref, new, strict=True))
        print(f"  {cmd}: same exit code and output {alike}/{len(ref)}")
        rows.append(row(cmd, got[f"{cmd}|plain"], got[f"{cmd}|sandboxed"]))
        if cmd == "true":
            rows.append(row("  minimal bwrap, bash -c true", got["true|plain"], got["floor"]))
    print(f"load at the end {load()}")
    table(f"command (n={runs})", rows)
    med = {name: f"{statistics.median(got[name]):.1f} ms" for name in list(arms)[-3:]}
    print(
        f"Sandbox.wrap (the argv, in Python, before bwrap starts): median {med['Sandbox.wrap']}, "
        f"p90 {p90(got['Sandbox.wrap']):.1f} ms; of which homeview.toolchain_dirs "
        f"{med['toolchain_dirs']}, the warm secret scan {med['warm scan']} (after the command "
        "ConfinedShell scans once more for new .git folders)\n"
    )
    shutil.rmtree(confined.scratch_root, ignore_errors=True)
    results["commands"] = {"entries": entries, "samples": got}


def bench_scan(base: Path, size: int, runs: int, firsts: int, results: dict[str, object]) -> None:
    """os.walk vs SecretScan: cold (a new instance: first in the process, with the names'
    cache cleared, in the first `firsts` rounds; and with the names seen before), warm, and
    warm after one new file (created untimed before it)."""
    root = base / f"scan-{size}"
    entries = make_tree(root, size)
    home = Path.home()
    budget = SecretScan(root, home).budget  # the product's; the bench's scans get no limit
    warm = SecretScan(root, home, budget=math.inf)
    found = len(warm.scan().secrets)
    added = iter(range(1_000_000))

    def first() -> None:
        _secret_name.cache_clear()  # as in a new process
        SecretScan(root, home, budget=math.inf).scan()

    arms: dict[str, Callable[[], object]] = {
        "os.walk": lambda: sum(1 for _ in os.walk(root)),
        "cold, first in the process": first,
        "cold, names seen before": lambda: SecretScan(root, home, budget=math.inf).scan(),
        "warm, nothing changed": warm.scan,
        "warm, 1 new file": warm.scan,
    }
    samples: Samples = {name: [] for name in arms}
    names = list(arms)
    for i in range(runs + 1):  # the first round is a warm-up
        cold = names[:3] if i % 2 else [*names[1:3], names[0]]
        for name in cold + names[3:]:
            if name == names[1] and not 0 < i <= firsts:
                continue
            if name == "warm, 1 new file":
                (root / "src/pkg05/mod001" / f"new_{next(added)}.py").write_text("x = 1\n")
            start = time.perf_counter()
            arms[name]()
            if i:
                samples[name].append((time.perf_counter() - start) * 1000)
    ref = samples["os.walk"]
    print(f"secret scan: {entries} entries, {found} secrets found, {runs} rounds, load {load()}")
    rows = [row(name, ref, samples[name]) for name in names[1:]]
    table(f"SecretScan.scan(), {entries} entries", rows, "os.walk", "scan")
    over = sum(t > budget * 1000 for t in samples[names[1]])
    print(f"first scans over the {budget:.0f} s budget (the command would not run): {over}\n")
    results[f"scan_{size}"] = {"entries": entries, "secrets": found, "samples": samples}


async def bench_tests(base: Path, runs: int, results: dict[str, object]) -> None:
    root = copy_sample(base / "calc-sample")
    sandbox = Sandbox(private_base=base / "homes")
    boxed, bare = new_shadow_dir(), new_shadow_dir()
    confined = ConfinedShell(sandbox, Confinement(writable=(boxed,), visible=(root,)))
    verifiers = {
        "plain": Verifier(root, detect_toolchain(root), PosixShell(), 300, shadow_dir=bare),
        "sandboxed": Verifier(root, detect_toolchain(root), confined, 300, shadow_dir=boxed),
    }
    workspace = Workspace(root, RecordingChannel())
    summaries: dict[str, set[str]] = {name: set() for name in verifiers}

    def arm(name: str) -> Timed:
        async def go() -> None:
            summaries[name].add((await verifiers[name].run(workspace)).summary().split(" in ")[0])

        return go

    print(f"test run: {root} (pytest), {runs} runs each, load {load()}")
    samples = await interleave({name: arm(name) for name in verifiers}, runs, warmup=1)
    print(f"  reports: {summaries}\n  load at the end {load()}")
    table(f"Verifier.run (n={runs})", [row("demo sample", samples["plain"], samples["sandboxed"])])
    for verifier in verifiers.values():
        verifier.close()
    shutil.rmtree(confined.scratch_root, ignore_errors=True)
    results["tests"] = {"samples": samples, "reports": {k: sorted(v) for k, v in summaries.items()}}


async def main() -> None:
    parser = argparse.ArgumentParser(description="What the OS sandbox costs (see bench/README.md).")
    parser.add_argument("--only", nargs="+", choices=("commands", "scan", "tests"))
    parser.add_argument("--runs", type=int, default=50, help="per command (default 50)")
    parser.add_argument("--scan-runs", type=int, default=20, help="rounds per size (default 20)")
    parser.add_argument("--first-scans", type=int, default=3, help="scans with no names seen")
    parser.add_argument("--test-runs", type=int, default=10, help="test runs each (default 10)")
    args = parser.parse_args()
    sections = args.only or ["commands", "scan", "tests"]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"sandbox cost -- {when}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"{platform.system()} {platform.release()}, load average {load()}\n"
    )
    results: dict[str, object] = {"date": when, "load_start": os.getloadavg()}
    base = Path(tempfile.mkdtemp(prefix="agent-lsp-sandbox-bench-", dir="/var/tmp"))
    try:
        if "commands" in sections:
            await bench_commands(base, args.runs, results)
        if "scan" in sections:
            for size in (2_000, 20_000):
                bench_scan(base, size, args.scan_runs, args.first_scans, results)
        if "tests" in sections:
            await bench_tests(base, args.test_runs, results)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    results["load_end"] = os.getloadavg()
    out = ROOT / "bench" / "results" / "sandbox.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"load average at the end {load()}; samples in {out.relative_to(ROOT)}")


if __name__ == "__main__":
    asyncio.run(main())
