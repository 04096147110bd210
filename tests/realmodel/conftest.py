"""The slow tier: a real model server (llama.cpp's Python server) with SmolLM2-135M-Instruct
for tests that assert the harness, not the model, and Qwen2.5-Coder-1.5B-Instruct for a real
fix. `.ci/install-model` installs them; the tests find them through AGENT_LSP_LLAMA_PYTHON,
AGENT_LSP_LLAMA_MODEL and AGENT_LSP_CODER_MODEL (default: under $AGENT_LSP_CI_CACHE).
Missing: skipped, or failed when CI is set."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("AGENT_LSP_CI_CACHE", "/root/.cache/agent-lsp-ci"))
PYTHON = Path(os.environ.get("AGENT_LSP_LLAMA_PYTHON", CACHE / "llama-venv" / "bin" / "python"))
MODEL = Path(
    os.environ.get("AGENT_LSP_LLAMA_MODEL", CACHE / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf")
)
ALIAS = "smollm2-135m"
CONTEXT = 8192
CODER_MODEL = Path(
    os.environ.get(
        "AGENT_LSP_CODER_MODEL", CACHE / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    )
)
CODER_ALIAS = "qwen2.5-coder-1.5b-instruct"
CODER_CONTEXT = 16384
STATUS = re.compile(r'"(GET|POST) (\S+) HTTP/[\d.]+" (\d{3})')


def missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (run .ci/install-model)")
    pytest.skip(f"{reason} (run .ci/install-model)")


@dataclass
class LlamaServer:
    base_url: str
    model: str
    log: Path

    def requests(self) -> list[tuple[str, str, int]]:
        """(method, path, status) of every request the server answered, from its access log."""
        text = self.log.read_text(errors="replace")
        return [(m[1], m[2], int(m[3])) for m in STATUS.finditer(text)]

    def chat_calls(self) -> int:
        return sum(1 for _, path, _ in self.requests() if path.endswith("/chat/completions"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200 and bool(json.loads(response.read()).get("data"))
    except (OSError, urllib.error.URLError, ValueError):
        return False


def _serve(
    tmp_path_factory: pytest.TempPathFactory,
    model: Path,
    alias: str,
    context: int,
    extra: list[str],
) -> Iterator[LlamaServer]:
    """llama-cpp-python's server on a free port with `model`, until the session ends."""
    if not PYTHON.exists():
        missing(f"no llama-cpp-python venv at {PYTHON}")
    check = subprocess.run(
        [str(PYTHON), "-c", "import llama_cpp.server"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check.returncode != 0:
        missing(f"llama_cpp.server does not import in {PYTHON}: {check.stderr[-500:]}")
    if not model.is_file():
        missing(f"no model file at {model}")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    argv = [
        str(PYTHON),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *extra,
        "--n_ctx",
        str(context),
        "--n_threads",
        str(os.cpu_count() or 1),
        "--n_threads_batch",
        str(os.cpu_count() or 1),
    ]
    # OpenMP threads that sleep instead of spinning: a shared, loaded CI machine.
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while not _answers(f"{base_url}/models"):
            if proc.poll() is not None:
                pytest.fail(
                    f"the llama.cpp server exited {proc.returncode}:\n{log.read_text()[-3000:]}"
                )
            if time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server did not answer:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield LlamaServer(base_url, alias, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    yield from _serve(
        tmp_path_factory, MODEL, ALIAS, CONTEXT, ["--chat_format", "chatml-function-calling"]
    )


@pytest.fixture(scope="session")
def coder_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """Qwen2.5-Coder-1.5B-Instruct with its own chat template (no --chat_format: the one
    llama-cpp-python offers for tools HTML-escapes the prompt), as the README says to serve it."""
    yield from _serve(tmp_path_factory, CODER_MODEL, CODER_ALIAS, CODER_CONTEXT, [])
