"""PosixShell: exit codes, merged output, timeouts, output cap, stdin, cancellation."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from adapters import PosixShell


def _alive(pid: int) -> bool:
    """True if ``pid`` is a live (non-zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


async def _gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_exit_code_and_merged_output(tmp_path: Path) -> None:
    result = await PosixShell().run(
        ["bash", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path, timeout=10
    )
    assert result.exit_code == 3
    assert "out\n" in result.output
    assert "err\n" in result.output
    assert not result.timed_out
    assert not result.truncated
    assert result.omitted_bytes == 0
    assert result.argv == ("bash", "-c", "echo out; echo err >&2; exit 3")
    ok = await PosixShell().run(["pwd"], cwd=tmp_path, timeout=10)
    assert ok.exit_code == 0
    assert ok.output.strip() == str(tmp_path)  # tmp_path is already resolved


async def test_missing_executable(tmp_path: Path) -> None:
    result = await PosixShell().run(["definitely-not-a-command-xyz"], cwd=tmp_path, timeout=5)
    assert result.exit_code == 127
    assert "definitely-not-a-command-xyz" in result.output


async def test_env_is_the_full_environment(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ONLY_THIS": "yes"}
    result = await PosixShell().run(["env"], cwd=tmp_path, timeout=10, env=env)
    assert "ONLY_THIS=yes" in result.output
    assert "HOME=" not in result.output


async def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    result = await PosixShell().run(
        ["bash", "-c", "sleep 100 & echo $!; sleep 100"], cwd=tmp_path, timeout=0.5
    )
    assert result.timed_out
    assert result.exit_code is None
    assert result.duration < 5
    grandchild = int(result.output.split()[0])
    assert await _gone(grandchild)


async def test_background_child_holding_the_pipe_does_not_hang(tmp_path: Path) -> None:
    result = await PosixShell().run(
        ["bash", "-c", "sleep 100 & echo $!; echo done"], cwd=tmp_path, timeout=20
    )
    assert result.exit_code == 0
    assert not result.timed_out
    assert result.duration < 5
    assert "done" in result.output
    assert await _gone(int(result.output.split()[0]))


async def test_output_is_capped(tmp_path: Path) -> None:
    cap = 100_000
    result = await PosixShell(max_output_bytes=cap).run(
        ["bash", "-c", "yes | head -c 50000000; echo; echo THE-END"], cwd=tmp_path, timeout=30
    )
    assert result.exit_code == 0
    assert result.truncated
    assert result.omitted_bytes == 50_000_000 + len("\nTHE-END\n") - cap
    assert len(result.output.encode()) <= cap + 100
    assert f"[... {result.omitted_bytes} bytes omitted ...]" in result.output
    assert result.output.startswith("y\ny\n")
    assert result.output.endswith("THE-END\n")


async def test_stdin_is_not_inherited(tmp_path: Path) -> None:
    result = await PosixShell().run(["cat"], cwd=tmp_path, timeout=10)
    assert result.exit_code == 0
    assert result.output == ""
    assert result.duration < 2


async def test_cancellation_kills_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 100 & echo $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait"
    task = asyncio.create_task(PosixShell().run(["bash", "-c", script], cwd=tmp_path, timeout=60))
    deadline = time.monotonic() + 5
    while not pidfile.exists():
        assert time.monotonic() < deadline, "script did not start"
        await asyncio.sleep(0.02)
    pid = int(pidfile.read_text())
    assert _alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(pid)


async def test_a_cancel_while_the_process_starts_kills_its_group(tmp_path: Path) -> None:
    """Cancelled after the fork but before asyncio has connected the pipes (a loaded machine):
    the whole group dies, not only the leader (asyncio's own clean-up kills the leader alone,
    and its background child lived on, holding the cancel until it ended)."""
    pidfile = tmp_path / "pid"
    script = f"sleep 100 & echo $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait"
    task = asyncio.create_task(PosixShell().run(["bash", "-c", script], cwd=tmp_path, timeout=60))
    for _ in range(3):  # the task runs on to a wait inside the spawn: forked, pipes not connected
        await asyncio.sleep(0)
    deadline = time.monotonic() + 10
    while not pidfile.exists():  # the loop blocked on purpose: the spawn cannot finish
        assert time.monotonic() < deadline, "script did not start"
        time.sleep(0.02)
    pid = int(pidfile.read_text())
    assert _alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):  # not TimeoutError: the child held the cancel
        await asyncio.wait_for(task, 30)
    assert await _gone(pid, within=10)


async def test_run_script_uses_bash(tmp_path: Path) -> None:
    shell = PosixShell()
    result = await shell.run_script(
        'echo "bash=$BASH_VERSION"; [[ -n "$BASH" ]] && echo ok', cwd=tmp_path, timeout=10
    )
    assert result.exit_code == 0
    assert "ok" in result.output
    assert "--noprofile" in result.argv
    assert result.argv[-1].startswith("echo")
