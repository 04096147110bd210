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
