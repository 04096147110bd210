"""Ending what a command left running without a sandbox (`adapters.reaper`), in a process of
its own (a subreaper changes the process it is set on for good): a real `setsid … &` stray,
and the window in which its environment cannot be read yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl: Linux only")

SCRIPT = """\
import builtins, io, os, subprocess
from adapters import reaper

blind = {blind}  # reads of a stray's environment that come back empty, as in mid-exec
seen = {{}}

def fake_open(path, *args, **kwargs):
    text = str(path)
    if text.endswith("/environ") and int(text.split("/")[2]) != os.getpid():
        seen[text] = seen.get(text, 0) + 1
        if seen[text] <= blind:
            return io.BytesIO(b"")  # the kernel's answer before the new image's stack is set up
    return builtins.open(path, *args, **kwargs)

reaper.open = fake_open
assert reaper.subreaper()
token = reaper.new_token()
env = dict(os.environ, **{{reaper.TREE_MARK: token}})
canary = {canary!r}
command = f"setsid sh -c 'sleep 3; echo left running > {{canary}}' >/dev/null 2>&1 </dev/null &"
subprocess.run(["sh", "-c", command], env=env, check=True, start_new_session=True)
print(reaper.end_strays(token))
"""


@pytest.mark.parametrize("blind", [0, 2])
def test_a_detached_stray_is_ended_even_while_its_environment_reads_empty(
    tmp_path: Path, blind: int
) -> None:
    canary = tmp_path / "canary"
    script = textwrap.dedent(SCRIPT.format(blind=blind, canary=str(canary)))
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) >= 1, done.stdout + done.stderr
    time.sleep(4)  # the stray would have written 3 s after it started
    assert not canary.exists(), "the stray ran on"
