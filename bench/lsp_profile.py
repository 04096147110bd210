"""py-spy sampling of a language server, and summaries of its samples and of loop stalls.

`PySpy` attaches `py-spy record --format raw --threads` to a pid and, when stopped, leaves folded
stacks (`thread (tid): frame;frame;... count`). `summarize_stacks` turns them into what the
report needs: for the main thread, the share of samples by event-loop callback, by innermost
frame of our own code, and by leaf function; for other threads, by their top frames.
`summarize_stalls` groups `loop_probe.py`'s stall log. `ensure_py_spy` finds py-spy, or installs it
from PyPI (`pip install --target`) into the benchmark's cache directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_client import REAPER

Json = dict[str, Any]
OWN_CODE = ("agent_lsp/", "adapters/")
_FOLDED = re.compile(r"^(.*) (\d+)$")
_LINE_NO = re.compile(r":\d+\)$")


def ensure_py_spy(cache: Path, explicit: str | None) -> str | None:
    """The py-spy executable: `explicit`, on PATH, in the cache, or installed there now."""
    if explicit:
        return explicit
    found = shutil.which("py-spy")
    if found:
        return found
    target = cache / "py-spy"
    binary = target / "bin" / "py-spy"
    if not binary.exists():
        print(f"[lsp-bench] installing py-spy into {target} ...", file=sys.stderr, flush=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(target), "py-spy"],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not binary.exists():
            print(f"[lsp-bench] py-spy install failed: {done.stderr[-500:]}", file=sys.stderr)
            return None
    return str(binary)


@dataclass
class PySpy:
    proc: asyncio.subprocess.Process
    output: Path

    @classmethod
    async def attach(cls, py_spy: str, pid: int, output: Path, rate: int = 250) -> PySpy:
        proc = await asyncio.create_subprocess_exec(
            py_spy,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(rate),
            "--threads",
            "--nonblocking",  # do not stop the server to sample it: timings stay close
            "--format",
            "raw",
            "--output",
            str(output),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        REAPER.add(proc.pid, "py-spy")
        await asyncio.sleep(0.5)  # attached
        return cls(proc, output)

    async def stop(self) -> str:
        """SIGINT (py-spy then writes its output); the text py-spy printed on stderr."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = await asyncio.wait_for(self.proc.communicate(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            err = b""
        REAPER.discard(self.proc.pid)
        return err.decode(errors="replace")


def _short(frame: str) -> str:
    """`func (path/file.py:12)` without the line number."""
    return _LINE_NO.sub(")", frame)


def _pct(count: int, total: int) -> float:
    return round(100 * count / total, 1) if total else 0.0


def _top(counter: Counter[str], total: int, n: int) -> list[Json]:
    return [{"pct": _pct(c, total), "samples": c, "frame": f} for f, c in counter.most_common(n)]


def summarize_stacks(path: Path, top: int = 15) -> Json:
    """Where the samples of a py-spy `--threads --format raw` recording went."""
    main_total = other_total = idle = 0
    by_callback: Counter[str] = Counter()
    by_own: Counter[str] = Counter()
    by_leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    others: Counter[str] = Counter()
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    for line in lines:
        match = _FOLDED.match(line.rstrip())
        if not match:
            continue
        frames, count = match.group(1).split(";"), int(match.group(2))
        thread, frames = frames[0], frames[1:]
        if not frames:
            continue
        if "MainThread" not in thread:
            other_total += count
            own = [f for f in frames if any(o in f for o in OWN_CODE)]
            where = " > ".join(_short(f) for f in (own[-2:] if own else frames[-2:]))
            others[where] += count
            continue
        main_total += count
        leaf = _short(frames[-1])
        if leaf.startswith(("EpollSelector.select", "select (")):
            idle += count
            continue
        runs = [i for i, f in enumerate(frames) if f.startswith("Handle._run ")]
        callback = (
            _short(frames[runs[-1] + 1]) if runs and runs[-1] + 1 < len(frames) else "(event loop)"
        )
        by_callback[callback] += count
        own = [f for f in frames if any(o in f for o in OWN_CODE)]
        by_own[_short(own[-1]) if own else "(no own frame: pygls / asyncio / stdlib)"] += count
        by_leaf[leaf] += count
        for frame in {_short(f) for f in frames}:
            inclusive[frame] += count
    busy = main_total - idle
    return {
        "main_thread_samples": main_total,
        "main_thread_idle_samples": idle,
        "main_thread_busy_samples": busy,
        "other_thread_samples": other_total,
        "busy_by_loop_callback": _top(by_callback, busy, top),
        "busy_by_innermost_own_frame": _top(by_own, busy, top),
        "busy_by_leaf": _top(by_leaf, busy, top),
        "busy_inclusive": _top(inclusive, busy, top * 6),
        "other_threads": _top(others, other_total, top),
    }


def read_stalls(path: Path, start: int = 0, end: int | None = None) -> list[Json]:
    """`loop_probe.py`'s entries between byte offsets `start` and `end` of its log."""
    if not path.exists():
        return []
    with path.open("rb") as fh:
        fh.seek(start)
        data = fh.read() if end is None else fh.read(max(0, end - start))
    entries: list[Json] = []
    for line in data.decode(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            entries.append(json.loads(line))
    return entries


def summarize_stalls(entries: Sequence[Json], top: int = 15) -> Json:
    """Stalls grouped by what ran, with counts, sums (wall and CPU) and maxima."""
    groups: dict[str, Json] = {}
    for entry in entries:
        chain = entry.get("to") or []
        own = [f for f in chain if any(f"({o}" in f for o in OWN_CODE)]
        section = _short(own[-1]) if own else (_short(chain[-1]) if chain else "")
        key = f"{entry['what']}, paused at {section}" if section else entry["what"]
        group = groups.setdefault(
            key, {"what": key, "n": 0, "total_ms": 0.0, "cpu_ms": 0.0, "max_ms": 0.0}
        )
        group["n"] += 1
        group["total_ms"] = round(group["total_ms"] + entry["ms"], 3)
        group["cpu_ms"] = round(group["cpu_ms"] + entry.get("cpu_ms", 0.0), 3)
        if entry["ms"] > group["max_ms"]:
            group["max_ms"] = entry["ms"]
            group["longest"] = {"from": entry.get("from", []), "to": entry.get("to", [])}
    ranked = sorted(groups.values(), key=lambda g: -g["total_ms"])
    longest = sorted(entries, key=lambda e: -e["ms"])[:5]
    return {
        "count": len(entries),
        "total_ms": round(sum(e["ms"] for e in entries), 1),
        "cpu_ms": round(sum(e.get("cpu_ms", 0.0) for e in entries), 1),
        "over_5ms": sum(1 for e in entries if e["ms"] > 5),
        "groups": ranked[:top],
        "longest": longest,
    }
