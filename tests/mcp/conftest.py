"""What the MCP tests share: the small server of tests/mcp/tiny_server.py, the real servers
from npm (installed once into the CI cache folder), a session with servers configured as the
user file would, and the sandbox check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_lsp.safety.sandbox import probe
from agent_lsp.session import Session
from tests.conftest import which_or_skip
from tests.test_agent import make_session

TINY = Path(__file__).with_name("tiny_server.py")
NPM_PACKAGES = (
    "@modelcontextprotocol/server-everything",
    "@modelcontextprotocol/server-filesystem",
)


def tiny(**more: Any) -> dict[str, Any]:
    """The small server as `mcp.servers` holds it (`more`: allow, network, env …)."""
    return {"command": [sys.executable, str(TINY)], **more}


def session_with(root: Path, base_url: str, servers: dict[str, Any], **more: Any) -> Session:
    """A session whose user settings name these MCP servers, the model the fake one."""
    return make_session(root, base_url, mcp={"servers": servers}, **more)


def require_sandbox() -> None:
    which_or_skip("bwrap")
    status = probe(refresh=True)
    if not status.available:
        if os.environ.get("CI"):
            pytest.fail(f"bwrap is installed but cannot run here: {status.reason}")
        pytest.skip(status.reason)


def npm_folder() -> Path:
    cache = Path(os.environ.get("AGENT_LSP_CI_CACHE") or Path.home() / ".cache/agent-lsp-ci")
    return cache / "npm-mcp"


@pytest.fixture(scope="session")
def npm_servers() -> Path:
    """The folder holding `node_modules` with the two reference servers (installed there by
    .ci/run, else here once); skipped with the reason when npm cannot install them (a
    failure under CI=1)."""
    which_or_skip("node")
    npm = which_or_skip("npm")
    folder = npm_folder()
    entries = [folder / "node_modules" / p / "dist" / "index.js" for p in NPM_PACKAGES]
    if all(e.is_file() for e in entries):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), *NPM_PACKAGES],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0 or not all(e.is_file() for e in entries):
        why = "timed out" if done is None else (done.stderr.strip().splitlines() or ["?"])[-1]
        message = f"npm could not install {', '.join(NPM_PACKAGES)}: {why}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return folder


def npm_server(folder: Path, package: str, *args: str, **more: Any) -> dict[str, Any]:
    """One of the npm servers as `mcp.servers` holds it: node and its entry file (under the
    home, which the sandbox hides: its folder is found and shown back read-only)."""
    entry = folder / "node_modules" / package / "dist" / "index.js"
    node = which_or_skip("node")
    return {"command": [node, str(entry), *args], **more}
