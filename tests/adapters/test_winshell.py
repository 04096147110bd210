"""WindowsShell: what it builds (command lines, translations, kill command), tested anywhere."""

from __future__ import annotations

import os

import pytest

from adapters import PosixShell, WindowsShell, default_shell
from adapters.winshell import CREATE_NEW_PROCESS_GROUP, native_path, to_cmd, to_powershell


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


def test_default_shell_by_os() -> None:
    expected = WindowsShell if os.name == "nt" else PosixShell
    assert isinstance(default_shell(), expected)
