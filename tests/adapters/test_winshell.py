"""WindowsShell: what it builds (command lines, translations, kill command) and when it is
chosen, tested anywhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import adapters
from adapters import PosixShell, WindowsShell, default_shell
from adapters.winshell import CREATE_NEW_PROCESS_GROUP, native_path, to_cmd, to_powershell
from agent_lsp.config.schema import Settings
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.sandbox import Confinement, Sandbox
from agent_lsp.session import Session


def test_powershell_command_line() -> None:
    shell = WindowsShell(powershell="pwsh.exe")
    argv = shell.script_argv("./node_modules/.bin/jest --ci $HOME ${CI} %USERPROFILE%")
    assert argv[:2] == ["pwsh.exe", "-NoLogo"]
    assert "-NoProfile" in argv
    assert "-NonInteractive" in argv
    assert argv[-2] == "-Command"
    assert argv[-1] == r".\node_modules\.bin\jest --ci $HOME $env:CI $env:USERPROFILE"


def test_cmd_command_line() -> None:
    argv = WindowsShell(flavor="cmd").script_argv("./scripts/test.cmd src/a.test.js $NODE_ENV")
    assert argv[:4] == ["cmd.exe", "/d", "/s", "/c"]
    assert argv[4] == r".\scripts\test.cmd src\a.test.js %NODE_ENV%"


@pytest.mark.parametrize(
    ("posix", "powershell"),
    [
        ("echo $PATH", "echo $env:PATH"),
        ("echo ${GOPATH}/bin", "echo $env:GOPATH/bin"),
        ("echo '$LITERAL' $X", "echo '$LITERAL' $env:X"),
        ("if ($true) { $null }", "if ($true) { $null }"),
        ("echo $env:ALREADY", "echo $env:ALREADY"),
        ("echo %TEMP%", "echo $env:TEMP"),
        ("Get-Item $global:x", "Get-Item $global:x"),
    ],
)
def test_powershell_env_translation(posix: str, powershell: str) -> None:
    assert to_powershell(posix) == powershell


@pytest.mark.parametrize(
    ("posix", "cmd"),
    [
        ("echo $HOME", "echo %HOME%"),
        ("type ./docs/a.txt", r"type .\docs\a.txt"),
        ("git log origin --format=a/b", "git log origin --format=a/b"),
        ("curl http://localhost/x", "curl http://localhost/x"),
        ("dir /b", "dir /b"),
        ("echo '$KEEP'", "echo '$KEEP'"),
    ],
)
def test_cmd_translation(posix: str, cmd: str) -> None:
    assert to_cmd(posix) == cmd


def test_process_options_and_kill() -> None:
    assert WindowsShell.spawn_options() == {"creationflags": CREATE_NEW_PROCESS_GROUP}
    assert CREATE_NEW_PROCESS_GROUP == 0x200
    assert WindowsShell.kill_argv(1234) == ["taskkill", "/T", "/F", "/PID", "1234"]
    assert WindowsShell().argv(["./node_modules/.bin/vitest", "src/a.js"]) == (
        r".\node_modules\.bin\vitest",
        "src/a.js",
    )
    assert native_path("a/b/c") == r"a\b\c"


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("win32", WindowsShell),
        ("linux", PosixShell),
        ("darwin", PosixShell),
        ("cygwin", PosixShell),
    ],
)
def test_the_shell_is_chosen_by_platform(platform: str, expected: type) -> None:
    shell = default_shell(platform, max_output_bytes=4096)
    assert type(shell) is expected
    assert shell.max_output_bytes == 4096


def test_default_shell_is_this_machines() -> None:
    expected = WindowsShell if sys.platform == "win32" else PosixShell
    assert type(default_shell()) is expected


def test_windows_command_forms_through_the_confined_shell(tmp_path: Path) -> None:
    """The shell every agent program goes through builds Windows' command lines on Windows."""
    confinement = Confinement(visible=(tmp_path,))
    shell = ConfinedShell(Sandbox(), confinement, default_shell("win32"))
    argv = shell.script_argv("./node_modules/.bin/jest $CI")
    assert argv[-2:] == ["-Command", r".\node_modules\.bin\jest $env:CI"]
    assert shell.but(network=True).inner is shell.inner
    posix = ConfinedShell(Sandbox(), confinement, default_shell("linux"))
    assert posix.script_argv("echo $CI")[-2:] == ["-c", "echo $CI"]


def test_the_session_uses_the_platform_shell(tmp_path: Path) -> None:
    session = Session(tmp_path, Settings())
    assert type(session.confined().inner) is type(default_shell())
    assert type(session.command_shell.inner) is type(default_shell())


def test_no_import_cycle_between_the_shells() -> None:
    """winshell and shell share the process runner (adapters.process); winshell never imports
    shell, and each imports on its own in a fresh interpreter."""
    source = (Path(adapters.__file__).parent / "winshell.py").read_text()
    assert "adapters.shell" not in source
    for module in ("adapters.winshell", "adapters.shell", "adapters.process"):
        code = f"import {module}"
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
