"""The parse worker gives its memory back when idle: it stops `idle_seconds` after its last job
or when an agent task ends (`SymbolIndex.release`), and a later parse starts it again (never
parsing in the calling thread because it was stopped) with the same symbols. No
`multiprocessing` resource tracker process is started along with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_lsp.symbols import SymbolIndex, extract
from agent_lsp.symbols.worker import THRESHOLD, ProcessExtractor
from tests.test_symbols_worker import alive, child_pids, source, wait_for, write_project


def test_the_idle_child_stops_and_a_later_parse_starts_it_again() -> None:
    text, _ = source("python", 3 * THRESHOLD)
    other, _ = source("go", 3 * THRESHOLD, offset=500)
    with ProcessExtractor(idle_seconds=0.2) as ex:
        assert ex(text, "python") == extract(text, "python")
        first = ex.pid
        assert first is not None and first in child_pids()
        assert wait_for(lambda: not alive(first), seconds=120)  # no job: it stops by itself
        assert first not in child_pids()
        assert ex.pid is None

        assert ex(other, "go") == extract(other, "go")
        assert ex(text, "python") == extract(text, "python")
        second = ex.pid
        assert second is not None and second != first and second in child_pids()
        assert (ex.served, ex.started, ex.crashes) == (3, 2, 0)  # all done by a child


def test_the_end_of_a_task_stops_the_child_and_the_next_parse_restarts_it(
    tmp_path: Path,
) -> None:
    write_project(tmp_path)
    extractor = ProcessExtractor()  # the default idle time: only release() stops it here
    index = SymbolIndex(tmp_path, extractor=extractor)
    plain = SymbolIndex(tmp_path)
    assert index.refresh() == plain.refresh() == 10
    first = extractor.pid
    assert first is not None and first in child_pids()
    served = extractor.served

    index.release()  # as at the end of an agent task
    assert first not in child_pids() and not alive(first)
    assert extractor.pid is None
    index.release()  # nothing left to stop

    big_go = tmp_path / "pkg/go/big.go"
    buffer, _ = source("go", 5 * THRESHOLD, offset=9000)
    assert index.update_file(big_go, buffer) and plain.update_file(big_go, buffer)
    second = extractor.pid
    assert second is not None and second != first and second in child_pids()
    assert extractor.served == served + 1  # parsed by the fresh child, not in this thread
    assert index.files() == plain.files()
    assert index.definitions("New9003") == plain.definitions("New9003") != []
    index.close()
    assert second not in child_pids() and not alive(second)
    assert index.definitions("New9003") == plain.definitions("New9003")


NO_TRACKER = """\
import os, sys
from pathlib import Path
from agent_lsp.symbols import SymbolIndex
from agent_lsp.symbols.worker import ProcessExtractor

root = Path(sys.argv[1])
for extractor in (ProcessExtractor(), ProcessExtractor(workers=2, pool_bytes=1)):
    index = SymbolIndex(root, extractor=extractor)
    index.refresh()
    assert extractor.served > 0, "the children did the work"
    index.close()
me = str(os.getpid())
for entry in Path("/proc").iterdir():
    try:
        fields = (entry / "stat").read_text().rpartition(")")[2].split()
        command = (entry / "cmdline").read_bytes().replace(b"\\0", b" ").decode()
    except (OSError, ValueError):
        continue
    if fields[1] == me:
        print(command)
"""


def test_no_resource_tracker_or_other_process_stays(tmp_path: Path) -> None:
    write_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", NO_TRACKER, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # no child left: no worker, no multiprocessing resource tracker
