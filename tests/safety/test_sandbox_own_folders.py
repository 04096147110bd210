"""agent-lsp's own folders of the user are not there inside the sandbox, wherever the XDG
variables put them: a sandboxed program that read the signing key could sign an improvement
record or a checkpoint that agent-lsp would then trust and act on outside the sandbox. With the
real bwrap, the real key and a real signed record."""

from __future__ import annotations

import pytest

from agent_lsp import signing
from tests.safety.conftest import Layout
from tests.safety.test_sandbox import outside, require_sandbox, run, shell_for

__all__ = ["outside"]


@pytest.mark.parametrize("inside_workspace_parent", [False, True])
async def test_the_signing_key_and_remembered_state_are_hidden(
    outside: Layout, monkeypatch: pytest.MonkeyPatch, inside_workspace_parent: bool
) -> None:
    # XDG folders outside the home (a CI runner, a shared machine): beside the workspace, or
    # holding it (a workspace kept under the cache folder must still be seen)
    base = outside.ws.parent / "xdg"
    cache, state = base / "cache", base / "state"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    key = signing.user_key()
    assert key is not None and signing.key_path().is_relative_to(cache)
    (state / "agent-lsp").mkdir(parents=True)
    (state / "agent-lsp/servers.json").write_text('{"canary": "state-canary"}')
    layout = outside
    if inside_workspace_parent:
        ws = cache / "agent-lsp" / "projects" / "ws"
        ws.mkdir(parents=True)
        (ws / "app.py").write_text("x = 1\n")
        layout = Layout(outside.home, ws)
    shell = shell_for(require_sandbox(outside.home, outside.ws.parent), layout)
    result = await run(
        shell,
        layout,
        f"python3 -c \"import sys; print(open(sys.argv[1], 'rb').read().hex())\" "
        f"{signing.key_path()}; cat {state}/agent-lsp/servers.json; ls {cache}/agent-lsp; "
        "ls .",
    )
    assert key.hex() not in result.output, result.output
    assert "state-canary" not in result.output, result.output
    if inside_workspace_parent:
        assert "app.py" in result.output, result.output  # the workspace itself is seen


@pytest.mark.parametrize(
    "shown", [".cache", ".local/state", ".cache/agent-lsp"], ids=["cache", "state", "own"]
)
async def test_a_home_folder_shown_back_keeps_agent_lsps_own_out(
    outside: Layout, monkeypatch: pytest.MonkeyPatch, shown: str
) -> None:
    """A folder of the home shown back read-only (an MCP server's `readable`, the folder of its
    program) that holds agent-lsp's own — `~/.cache` holds the signing key, `~/.local/state`
    the remembered servers — shows an empty folder in their place; one of agent-lsp's own is
    not shown at all. The rest of it is seen."""
    monkeypatch.setenv("HOME", str(outside.home))
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("XDG_STATE_HOME")
    key = signing.user_key()
    assert key is not None and signing.key_path() == outside.home / ".cache/agent-lsp/cache.key"
    state = outside.home / ".local/state/agent-lsp"
    state.mkdir(parents=True)
    (state / "servers.json").write_text('{"canary": "state-canary"}')
    for folder in (".cache/notes", ".local/state/notes"):
        (outside.home / folder).mkdir(parents=True)
        (outside.home / folder / "seen.txt").write_text("seen-canary\n")
    sandbox = require_sandbox(outside.home, outside.ws.parent)
    sandbox.toolchains = (outside.home / shown,)
    result = await run(
        shell_for(sandbox, outside),
        outside,
        f"python3 -c \"import sys; print(open(sys.argv[1], 'rb').read().hex())\" "
        f"{signing.key_path()}; cat {state}/servers.json; ls -A ~/.cache/agent-lsp; "
        f"cat ~/{shown.split('/')[0]}/*/seen.txt ~/.local/state/notes/seen.txt",
    )
    assert key.hex() not in result.output, result.output
    assert "state-canary" not in result.output, result.output
    assert "sandbox-home" not in result.output, result.output  # the other workspaces' homes
    assert ("seen-canary" in result.output) is (shown != ".cache/agent-lsp"), result.output
