"""Ending a process tree for real where there is no OS sandbox (whose PID namespace ends
everything with the command). A command can leave processes behind that no process-group kill
reaches: `setsid cmd &`, a double fork. On Linux this process becomes a child subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`), so whatever a command orphans is re-parented here instead of
to init; each run marks its environment with a token of its own, and when the run ends every
re-parented process carrying the token is killed with all its descendants, and reaped.

Without `prctl` (macOS, BSD) the strays cannot be found: `subreaper()` says so, and the caller
says so in the result."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import sys
import time

__all__ = ["TREE_MARK", "end_strays", "new_token", "subreaper"]

TREE_MARK = "AGENT_LSP_PROCESS_TREE"  # the environment variable holding a run's token
_PR_SET_CHILD_SUBREAPER = 36
_state: list[bool] = []
_UNSURE_WAIT = 2.0  # how long an environment that cannot be read yet is read again


def subreaper() -> bool:
    """Make this process a child subreaper (once); whether it is one."""
    if not _state:
        ok = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                ok = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                ok = False
        _state.append(ok)
    return _state[0]


def new_token() -> str:
    return secrets.token_hex(8)


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process visible in /proc."""
    out: dict[int, tuple[int, str]] = {}
    for name in os.listdir("/proc"):  # noqa: PTH208 - names only, thousands of them
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:  # noqa: PTH123 - one small read
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 2 and fields[1].isdigit():
            out[int(name)] = (int(fields[1]), fields[0])
    return out


def _marked(pid: int, token: str) -> bool | None:
    """Whether the process's environment carries `token`; None while that cannot be told yet:
    an environment that reads empty (a process in the middle of `exec`, its new image's stack
    not set up yet: right after its parent exits this is the common case) or cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:  # noqa: PTH123
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False  # gone
    except OSError:
        return None
    if not data:
        return None
    return f"\0{TREE_MARK}={token}\0".encode() in b"\0" + data + b"\0"


def _tree(tops: list[int], procs: dict[int, tuple[int, str]]) -> list[int]:
    found, todo = set(tops), list(tops)
    while todo:
        parent = todo.pop()
        for pid, (ppid, _) in procs.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                todo.append(pid)
    return sorted(found)


def end_strays(token: str, rounds: int = 50) -> int:
    """Kill every live process re-parented to this one whose environment carries `token`, with
    all its descendants, and reap them; how many were killed. Zombies found are left alone: an
    exited direct child is its spawner's to reap."""
    me = os.getpid()
    killed: set[int] = set()
    unsure_until = time.monotonic() + _UNSURE_WAIT
    for _ in range(rounds + int(_UNSURE_WAIT / 0.02)):
        procs = _processes()
        strays: list[int] = []
        unsure = False
        for pid, (ppid, state) in procs.items():
            if ppid != me or state == "Z":
                continue
            mark = True if pid in killed else _marked(pid, token)
            if mark:
                strays.append(pid)
            unsure = unsure or mark is None
        if not strays and not (unsure and time.monotonic() < unsure_until):
            break
        for pid in _tree(strays, procs):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.02)
    _reap(killed, wait=2.0)
    return len(killed)


def _reap(pids: set[int], wait: float) -> None:
    """Collect the exit status of the killed processes: each becomes this one's child once
    the process above it is gone (a subreaper adopts it)."""
    deadline = time.monotonic() + wait
    pending = set(pids)
    while pending:
        for pid in list(pending):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours: reaped already, or its parent still stands
                if not os.path.exists(f"/proc/{pid}"):  # noqa: PTH110
                    pending.discard(pid)
                continue
            if done:
                pending.discard(pid)
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(0.02)
