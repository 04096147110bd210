"""What the benchmark needs, installed when missing and cached across runs:

* node_modules for the jest and vitest tasks (one install per runner, linked into every copy);
* the peers, each in its own venv under the cache folder (pinned versions);
* the model server and the coder model, through .ci/install-model (its cache).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NODE_PACKAGES = {"jest": {"jest": "30.2.0"}, "vitest": {"vitest": "3.2.4"}}
# The peers as the benchmark ran them (a newer release is a different harness: bump on purpose).
PEERS = {
    "mini": ("mini-swe-agent==2.4.6", "mini"),
    "aider": ("aider-chat==0.86.2", "aider"),
}


class InstallError(Exception):
    """Something the benchmark needs could not be installed (said in one line or a few)."""


def _say(message: str) -> None:
    print(f"effect: {message}", file=sys.stderr, flush=True)


def _run(argv: list[str], cwd: Path | None = None, timeout: float = 1800) -> None:
    done = subprocess.run(
        argv,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise InstallError(
            f"{' '.join(argv[:4])} … failed ({done.returncode}):\n{done.stderr[-2000:]}"
        )


def node_modules(runner: str, cache: Path) -> Path:
    """The cached node_modules of `runner` (jest or vitest), installed once (under a lock)."""
    folder = cache / "node" / runner
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {"name": f"bench-{runner}", "private": True, "devDependencies": NODE_PACKAGES[runner]}
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / ".installed"
        if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
            _say(f"npm install {runner} into {folder}")
            (folder / "package.json").write_text(json.dumps(wanted, indent=2) + "\n")
            _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder)
            stamp.write_text(json.dumps(wanted))
    return folder / "node_modules"


def peer(name: str, cache: Path) -> Path:
    """The peer's command in its own venv (created and installed when missing)."""
    requirement, command = PEERS[name]
    venv = cache / "venvs" / command
    exe = venv / "bin" / command
    stamp = venv / ".installed"
    if exe.exists() and stamp.exists() and stamp.read_text() == requirement:
        return exe
    _say(f"installing {requirement} into {venv}")
    if not (venv / "bin" / "python").exists():
        _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", requirement])
    if not exe.exists():
        raise InstallError(f"{requirement} installed no {command} in {venv}/bin")
    stamp.write_text(requirement)
    return exe


def model_server() -> tuple[Path, Path]:
    """(the llama-cpp-python server's python, the coder model): .ci/install-model builds and
    caches both; only the model when the server's venv is there already."""
    ci_cache = Path(os.environ.get("AGENT_LSP_CI_CACHE", "/root/.cache/agent-lsp-ci"))
    python = ci_cache / "llama-venv" / "bin" / "python"
    ready = (
        python.exists()
        and subprocess.run(
            [str(python), "-c", "import llama_cpp.server"], capture_output=True, check=False
        ).returncode
        == 0
    )
    argv = [str(REPO / ".ci" / "install-model")]
    if ready:
        argv.append("--coder-only")
    else:
        _say("building the model server (.ci/install-model: 10-40 minutes the first time)")
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=7200)
    exports = dict(
        line.removeprefix("export ").split("=", 1)
        for line in done.stdout.splitlines()
        if line.startswith("export ")
    )
    model = exports.get("AGENT_LSP_CODER_MODEL")
    if done.returncode != 0 or not model:
        raise InstallError(f".ci/install-model failed:\n{done.stderr[-3000:]}")
    return Path(exports.get("AGENT_LSP_LLAMA_PYTHON", str(python))), Path(model)
