"""The path resolver: `..`, `~`, absolute paths, symlinks (committed, parent folders, loops),
Windows drive, device, UNC and stream forms; secret, protected and start-up files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_lsp.safety.paths import PathError, PathGuard
from tests.safety.conftest import Layout


def guard(layout: Layout, windows: bool = False, extra: tuple[Path, ...] = ()) -> PathGuard:
    return PathGuard(layout.ws, extra, home=layout.home, windows=windows)


@pytest.mark.parametrize(
    "raw",
    [
        "../../.bashrc",
        "../home/.bashrc",
        "src/../../home/notes.txt",
        "{home}/notes.txt",
        "~/notes.txt",
        "~",
        "/etc/passwd",
        "/",
        "keylink",  # committed symlink to ~/.ssh/id_rsa
        "sshdir/config",  # symlinked parent folder
        "homelink/notes.txt",
        "homelink/../ws/../home",
    ],
)
def test_escapes_are_outside(layout: Layout, raw: str) -> None:
    res = guard(layout).resolve(layout.fmt(raw))
    assert not res.inside and not res.in_root, res


@pytest.mark.parametrize(
    "raw", ["src/app.py", "./src/../README.md", "{ws}/src/app.py", "new/file.txt", "."]
)
def test_inside(layout: Layout, raw: str) -> None:
    res = guard(layout).resolve(layout.fmt(raw))
    assert res.inside and res.in_root and not res.secret and not res.protected


def test_extra_roots_count_as_inside(layout: Layout, tmp_path: Path) -> None:
    extra = tmp_path / "shared"
    extra.mkdir()
    res = guard(layout, extra=(extra,)).resolve(str(extra / "x.txt"))
    assert res.inside and not res.in_root


@pytest.mark.parametrize(
    "raw",
    [
        "\\\\server\\share\\x",
        "//server/share/x",
        "\\\\?\\C:\\Windows",
        "\\\\.\\PhysicalDrive0",
        "C:\\Users\\me\\.ssh\\id_rsa",
        "c:relative",
        "a\0b",
        "",
        "   ",
        "~nosuchuser-xyz/x",
        "a\ud800b",
    ],
)
def test_refused_forms(layout: Layout, raw: str) -> None:
    with pytest.raises(PathError):
        guard(layout).resolve(raw)


@pytest.mark.parametrize(
    "raw", ["CON", "nul.txt", "src/aux.py", "COM1", "a.txt:stream", "PROGRA~1"]
)
def test_windows_device_names_and_streams(layout: Layout, raw: str) -> None:
    with pytest.raises(PathError):
        guard(layout, windows=True).resolve(raw)
    guard(layout, windows=False).resolve(raw)  # ordinary names elsewhere


def test_backslashes_are_separators(layout: Layout) -> None:
    assert not guard(layout).resolve("..\\..\\.bashrc").inside
    assert guard(layout).resolve("src\\app.py").path == layout.ws / "src/app.py"


@pytest.mark.parametrize(
    ("raw", "secret"),
    [
        (".env", True),
        (".env.local", True),
        (".envrc", True),
        ("config/server.pem", True),
        ("deploy/id_ed25519", True),
        ("x/.ssh/known_hosts", True),
        ("keylink", True),
        ("~/.aws/config", True),
        ("~/.netrc", True),
        ("~/.config/agent-lsp/config.toml", True),
        ("~/.kube/config", True),
        ("src/app.py", False),
        ("environment.py", False),
        ("README.md", False),
        # package managers, clouds, databases, infrastructure
        (".npmrc", True),
        ("web/.npmrc", True),
        (".yarnrc", True),
        (".yarnrc.yml", True),
        ("config/prod.env", True),
        ("deploy/staging.env", True),
        (".env.example", True),  # secret by name; a path rule may allow it
        ("credentials.json", True),
        ("gcp/credentials", True),
        ("service-account.json", True),
        ("keys/service-account-prod.json", True),
        ("infra/prod.tfvars", True),
        ("infra/prod.auto.tfvars.json", True),
        (".terraformrc", True),
        ("terraform.rc", True),
        (".my.cnf", True),
        (".boto", True),
        (".s3cfg", True),
        (".dockercfg", True),
        (".git-credentials", True),
        # shell and REPL histories
        (".bash_history", True),
        (".zsh_history", True),
        (".python_history", True),
        (".node_repl_history", True),
        (".psql_history", True),
        (".mysql_history", True),
        (".sqlite_history", True),
        (".lesshst", True),
        ("logs/.irb_history", True),
        # in the home folder
        ("~/.cargo/credentials", True),
        ("~/.cargo/credentials.toml", True),
        ("~/.gem/credentials", True),
        ("~/.m2/settings.xml", True),
        ("~/.gradle/gradle.properties", True),
        ("~/.config/pip/pip.conf", True),
        ("~/.pip/pip.conf", True),
        ("~/.config/yarn/global/.yarnrc", True),
        ("~/.terraform.d/credentials.tfrc.json", True),
        ("~/.config/rclone/rclone.conf", True),
        ("~/.config/hub", True),
        ("~/.config/gh/hosts.yml", True),
        ("~/.local/share/keyrings/login.keyring", True),
        # not secrets: look-alikes and the same names in a project
        ("src/environment.ts", False),
        ("settings.xml", False),
        ("gradle.properties", False),
        ("pip.conf", False),
        ("docs/credentials.md", False),
        ("src/history.py", False),
        ("service.json", False),
        ("variables.tf", False),
        ("package.json", False),
        ("~/.config/pip/other.txt", False),
    ],
)
def test_secret_files(layout: Layout, raw: str, secret: bool) -> None:
    assert guard(layout).resolve(raw).secret is secret


def test_windows_folds_case_and_trailing_dots(layout: Layout) -> None:
    g = guard(layout, windows=True)
    assert g.resolve(".ENV").secret
    assert g.resolve(".Git/config").protected
    assert g.resolve(".agent-lsp/Policy.toml").protected
    assert g.resolve(".Agent-LSP/memory/notes.md").protected
    assert g.resolve(".VSCode/settings.json").protected
    assert g.resolve(".ENVRC").protected and g.resolve(".Nvim.Lua ").protected
    # elsewhere too: macOS folds case by default (and a `.VSCode` folder is no loss on Linux)
    assert guard(layout).resolve(".VSCode/settings.json").protected
    assert not guard(layout).resolve(".Nvim.Lua ").protected  # trailing spaces: Windows only


@pytest.mark.parametrize(
    ("raw", "protected"),
    [
        (".git/config", True),
        (".git/hooks/pre-commit", True),
        ("sub/.git/HEAD", True),
        (".agent-lsp/policy.toml", True),
        (".agent-lsp/config.toml", True),
        (".agent-lsp/memory/notes.md", True),
        (".agent-lsp/init.d/S10-setup.sh", True),
        (".agent-lsp/state/project/facts.md", True),
        (".agent-lsp", True),
        (".vscode/settings.json", True),
        (".vscode/tasks.json", True),
        (".idea/workspace.xml", True),
        (".zed/settings.json", True),
        (".helix/config.toml", True),
        (".nvim.lua", True),
        (".nvimrc", True),
        (".exrc", True),
        ("sub/.nvim.lua", True),
        (".dir-locals.el", True),
        ("lisp/.dir-locals-2.el", True),
        (".envrc", True),
        ("pkg/.vscode/launch.json", True),
        (".github/workflows/ci.yml", False),
        ("src/git.py", False),
        ("src/vscode.py", False),
        ("docs/agent-lsp.md", False),
        ("nvim.lua", False),
        (".envrc.md", False),
    ],
)
def test_protected_files(layout: Layout, raw: str, protected: bool) -> None:
    assert guard(layout).resolve(raw).protected is protected


def test_devices_and_startup_files(layout: Layout) -> None:
    g = guard(layout)
    assert g.resolve("/dev/sda").device and not g.resolve("/dev/null").device
    assert g.resolve("/dev/null").safe_device
    assert g.resolve("~/.bashrc").startup and g.resolve("/etc/profile.d/x.sh").startup
    assert not g.resolve("src/app.py").startup


def test_symlink_loops_and_dangling_links(layout: Layout) -> None:
    (layout.ws / "loop").symlink_to(layout.ws / "loop")
    (layout.ws / "dangling").symlink_to(layout.home / "missing.txt")
    assert guard(layout).resolve("loop").inside
    assert not guard(layout).resolve("dangling").inside


def test_a_symlink_swapped_to_point_out_is_seen(layout: Layout) -> None:
    link = layout.ws / "data"
    link.symlink_to(layout.ws / "src")
    assert guard(layout).resolve("data/app.py").inside
    link.unlink()
    link.symlink_to(layout.home)
    assert not guard(layout).resolve("data/notes.txt").inside
    assert os.path.realpath(layout.ws / "data") == str(layout.home)
