"""Run subprocesses without blocking, with capped output, timeouts and process-group kills."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from adapters.process import execute
from adapters.results import CommandResult
from adapters.winshell import WindowsShell

__all__ = [
    "PlatformShell",
    "PosixShell",
    "ScriptShell",
    "Shell",
    "default_shell",
    "execute",
    "scratch_dir",
]


class Shell(Protocol):
    """Something that runs a command and reports a :class:`CommandResult`."""

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult: ...


class ScriptShell(Shell, Protocol):
    """A shell that also runs a command line through the platform's command interpreter."""

    async def run_script(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult: ...


class PlatformShell(ScriptShell, Protocol):
    """A machine's own shell (:func:`default_shell`): it also says how it would run a command
    line, and how much output it keeps."""

    max_output_bytes: int

    def script_argv(self, command: str, env: Mapping[str, str] | None = None) -> list[str]: ...


def _killpg(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _posix_kill(pid: int, hard: bool) -> None:
    _killpg(pid, signal.SIGKILL if hard else signal.SIGTERM)


class PosixShell:
    """Executes argv directly in its own process group, stdin at /dev/null."""

    def __init__(self, max_output_bytes: int = 1_000_000) -> None:
        self.max_output_bytes = max_output_bytes

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``argv``; on timeout or cancellation the whole process group is killed."""
        return await execute(
            tuple(argv),
            cwd=cwd,
            timeout=timeout,
            env=env,
            max_output_bytes=self.max_output_bytes,
            spawn={"start_new_session": True},
            kill=_posix_kill,
        )

    def script_argv(self, command: str, env: Mapping[str, str] | None = None) -> list[str]:
        """``bash --noprofile --norc -c command`` (``sh -c`` without bash)."""
        path = env.get("PATH") if env is not None else None
        bash = shutil.which("bash", path=path) or shutil.which("bash")
        return [bash, "--noprofile", "--norc", "-c", command] if bash else ["sh", "-c", command]

    async def run_script(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` with ``bash --noprofile --norc -c`` (``sh -c`` without bash)."""
        argv = self.script_argv(command, env)
        return await self.run(argv, cwd=cwd, timeout=timeout, env=env)


def scratch_dir(shell: object, prefix: str) -> Path:
    """A new temporary folder the programs `shell` runs can write (reports, event logs). A
    sandboxed shell names the place with a ``scratch_root`` attribute; others get the system's
    temporary folder. The caller removes it."""
    base = getattr(shell, "scratch_root", None)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def default_shell(platform: str = sys.platform, max_output_bytes: int = 1_000_000) -> PlatformShell:
    """The shell for ``platform`` (a ``sys.platform`` value, this machine's by default):
    :class:`WindowsShell` on Windows (``taskkill`` tree kills, PowerShell scripts),
    :class:`PosixShell` elsewhere (process-group kills, bash scripts)."""
    if platform == "win32":
        return WindowsShell(max_output_bytes)
    return PosixShell(max_output_bytes)
