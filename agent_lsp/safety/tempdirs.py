"""The process's own temporary folders (`agent-lsp-scratch-*`, `agent-lsp-shadow-*`): named
after the process that owns them, removed when it exits — normally (`atexit`) or on SIGTERM
or SIGHUP (`remove_on_signals`, an editor closing) — and, for a process that could not
(SIGKILL, a crash), by the next agent-lsp that starts (`sweep_stale`): a folder of ours whose
owner is gone."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from types import FrameType

__all__ = ["PREFIXES", "make_dir", "remove_all", "remove_on_signals", "sweep_stale"]

PREFIXES = ("agent-lsp-scratch-", "agent-lsp-shadow-")
# `<prefix><owner pid>-<its pid namespace>-<mkdtemp's random part>`: a pid means something only
# in its namespace (a sandbox has its own, and may see our scratch folder). Folders of older
# versions have neither.
_OWNED = re.compile(r"^agent-lsp-(?:scratch|shadow)-(\d+)-(\d+)-[a-z0-9_]+$")

_made: list[Path] = []
_lock = threading.RLock()  # re-entrant: the signal handler runs on the main thread
_swept: list[bool] = []


def make_dir(prefix: str) -> Path:
    """A new folder `<tmp>/<prefix><pid>-<pid namespace>-XXXXXXXX`, removed when this process
    ends; the first one made also sweeps the folders that dead processes left behind."""
    if prefix not in PREFIXES:
        raise ValueError(f"not a temporary folder of ours: {prefix!r}")
    if not _swept:
        sweep_stale()
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-{_namespace()}-"))
    with _lock:
        if not _made:
            atexit.register(remove_all)
        _made.append(path)
    return path


def remove_all() -> None:
    """Remove every folder this process made (those already gone are skipped)."""
    with _lock:
        made, _made[:] = list(_made), []
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def _namespace() -> int:
    """The inode of this process's pid namespace (0: unknown, then nothing is swept)."""
    try:
        return Path("/proc/self/ns/pid").stat().st_ino
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, as another user
        return True
    return True


def sweep_stale(where: Path | None = None) -> list[Path]:
    """Remove the folders of ours (our prefixes, our uid, our pid namespace) whose owner
    process is gone; never a live process's, never one of an older version (no pid in the
    name). What it removed."""
    _swept[:] = [True]
    top = Path(where or tempfile.gettempdir())
    removed: list[Path] = []
    if os.name != "posix":  # no signal 0 to ask whether a process lives (Windows: it kills)
        return removed
    try:
        entries = list(os.scandir(top))
    except OSError:
        return removed
    uid, namespace = os.getuid(), _namespace()
    if not namespace:
        return removed
    for entry in entries:
        found = _OWNED.match(entry.name)
        if found is None or int(found.group(2)) != namespace or _alive(int(found.group(1))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_symlink() or not entry.is_dir() or entry.stat().st_uid != uid:
                continue
            shutil.rmtree(entry.path)
            removed.append(Path(entry.path))
    return removed


def _on_signal(signum: int, frame: FrameType | None) -> None:
    remove_all()
    signal.signal(signum, signal.SIG_DFL)  # then end as that signal would have ended us
    os.kill(os.getpid(), signum)


def remove_on_signals() -> None:
    """On SIGTERM and SIGHUP, remove the folders and end as the signal would have; a signal
    the process was told to ignore (`nohup`) or already handles is left alone. Call it from
    the main thread."""
    for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM)):
        with contextlib.suppress(ValueError, OSError):  # not the main thread; no such signal
            if signal.getsignal(signum) is signal.SIG_DFL:
                signal.signal(signum, _on_signal)
