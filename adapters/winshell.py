"""Windows: PowerShell or cmd command lines, env-var and path translation, tree kills."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from adapters.process import execute
from adapters.results import CommandResult

__all__ = [
    "CREATE_NEW_PROCESS_GROUP",
    "WindowsShell",
    "native_path",
    "to_cmd",
    "to_powershell",
]

CREATE_NEW_PROCESS_GROUP = 0x00000200  # subprocess.CREATE_NEW_PROCESS_GROUP (Windows only)
Flavor = Literal["powershell", "cmd"]

# PowerShell's own variables: ``$true`` must not become ``$env:true``.
_PS_AUTOMATIC = frozenset(
    {"true", "false", "null", "_", "args", "input", "error", "home", "host", "pid", "pwd"}
    | {"lastexitcode", "psscriptroot", "pshome", "psversiontable", "env", "this", "matches"}
    | {"global", "local", "script", "private", "using"}  # scope qualifiers such as $global:x
)
_POSIX_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_]\w*)\}|(?P<plain>[A-Za-z_]\w*))")
_CMD_VAR = re.compile(r"%(?P<name>[A-Za-z_]\w*)%")
# ``./x``, ``../x/y``, ``dir/sub/file.py``: relative paths with forward slashes.
_REL_PATH = re.compile(r"^(?:\.{1,2}/|[\w.-]+/)[\w./-]*$")


def native_path(path: str) -> str:
    """``path`` with Windows separators (``./node_modules/.bin/jest`` -> ``.\\node_modules...``)."""
    return path.replace("/", "\\")


def _outside_single_quotes(command: str) -> list[tuple[str, bool]]:
    """Split into (text, translatable) pieces; single-quoted text is literal in both shells."""
    pieces: list[tuple[str, bool]] = []
    for index, part in enumerate(re.split(r"('[^']*')", command)):
        if part:
            pieces.append((part, index % 2 == 0))
    return pieces


def _path_tokens(text: str) -> str:
    return re.sub(r"[^\s\"'|&;<>()]+", lambda m: _native_token(m.group(0)), text)


def _native_token(token: str) -> str:
    if "://" in token or token.startswith(("-", "/")) or not _REL_PATH.match(token):
        return token
    return native_path(token)


def _program_path(command: str) -> str:
    match = re.match(r"(\s*)([^\s\"']+)", command)
    if match is None:
        return command
    return match.group(1) + _native_token(match.group(2)) + command[match.end() :]


def to_powershell(command: str) -> str:
    """Translate simple POSIX/cmd env syntax for PowerShell: ``$VAR``, ``${VAR}`` and ``%VAR%``
    become ``$env:VAR``; a leading relative program path gets backslashes."""

    def posix(match: re.Match[str]) -> str:
        name = match["braced"] or match["plain"]
        if match["plain"] and name.lower() in _PS_AUTOMATIC:
            return match.group(0)
        return f"$env:{name}"

    out: list[str] = []
    for text, translate in _outside_single_quotes(command):
        if translate:
            text = _CMD_VAR.sub(lambda m: f"$env:{m['name']}", _POSIX_VAR.sub(posix, text))
        out.append(text)
    return _program_path("".join(out))


def to_cmd(command: str) -> str:
    """Translate simple POSIX env syntax for cmd (``$VAR``/``${VAR}`` -> ``%VAR%``) and
    relative paths with forward slashes to backslashes."""
    out: list[str] = []
    for text, translate in _outside_single_quotes(command):
        if translate:
            text = _POSIX_VAR.sub(lambda m: f"%{m['braced'] or m['plain']}%", text)
            text = _path_tokens(text)
        out.append(text)
    return "".join(out)


def _taskkill(pid: int, hard: bool) -> None:
    del hard  # taskkill /F is the only reliable way to end a console tree
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            WindowsShell.kill_argv(pid),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )


class WindowsShell:
    """Runs argv in a new process group, scripts through PowerShell (default) or cmd; kills the
    whole process tree with ``taskkill /T /F``."""

    def __init__(
        self,
        max_output_bytes: int = 1_000_000,
        *,
        flavor: Flavor = "powershell",
        powershell: str | None = None,
    ) -> None:
        self.max_output_bytes = max_output_bytes
        self.flavor: Flavor = flavor
        self.powershell = powershell or shutil.which("pwsh") or "powershell.exe"

    def script_argv(self, command: str, env: Mapping[str, str] | None = None) -> list[str]:
        """The argv running ``command`` (written in POSIX style or native) on Windows."""
        del env
        if self.flavor == "cmd":
            # /d: no AutoRun commands; /s: the quotes that Windows' argv quoting puts around
            # the command are stripped and the rest is kept verbatim.
            return ["cmd.exe", "/d", "/s", "/c", to_cmd(command)]
        return [
            self.powershell,
            *("-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass"),
            *("-Command", to_powershell(command)),
        ]

    def argv(self, argv: Sequence[str]) -> tuple[str, ...]:
        """``argv`` with the program's relative path in Windows form."""
        args = tuple(argv)
        return (_native_token(args[0]), *args[1:]) if args else args

    @staticmethod
    def spawn_options() -> dict[str, Any]:
        """Process-creation options: a new process group, so Ctrl+Break and kills stay local."""
        return {"creationflags": CREATE_NEW_PROCESS_GROUP}

    @staticmethod
    def kill_argv(pid: int) -> list[str]:
        """The command that ends ``pid`` and all its descendants."""
        return ["taskkill", "/T", "/F", "/PID", str(pid)]

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``argv``; on timeout or cancellation the whole process tree is killed."""
        return await execute(
            self.argv(argv),
            cwd=cwd,
            timeout=timeout,
            env=env,
            max_output_bytes=self.max_output_bytes,
            spawn=self.spawn_options(),
            kill=_taskkill,
        )

    async def run_script(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` through PowerShell (or cmd with ``flavor="cmd"``)."""
        return await self.run(self.script_argv(command, env), cwd=cwd, timeout=timeout, env=env)
