from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_lsp.demo import copy_sample
from tests.fakes.openai_server import FakeOpenAIServer

BUG = "    return sum(values) / (len(values) + 1)\n"
FIX = "    return sum(values) / len(values)\n"


def interruptible() -> None:
    """`preexec_fn` of a child a test sends Ctrl-C: SIGINT as at a terminal. A run started in the
    background of a shell without job control ignores SIGINT, and its children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(autouse=True, scope="session")
def private_sandbox_homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Sandboxed programs get a private home per workspace under XDG_CACHE_HOME: keep the
    suite's many temporary workspaces out of the real cache folder."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(autouse=True)
def private_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """What agent-lsp remembers of model servers (their context window, whether they stream
    with tools) lives in XDG_STATE_HOME: one folder per test, so that no test inherits what
    another taught it (the fake servers' ports are reused)."""
    old = os.environ.get("XDG_STATE_HOME")
    state = tmp_path_factory.mktemp("state")
    os.environ["XDG_STATE_HOME"] = str(state)
    yield state
    if old is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = old


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A tiny Python project with one failing test (average() divides by n + 1)."""
    return copy_sample(tmp_path / "calc")


@pytest.fixture
def server_env(fake_openai: FakeOpenAIServer, tmp_path: Path) -> dict[str, str]:
    """Environment for an agent-lsp subprocess talking to the fake model."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AGENT_LSP_", "PYTEST_"))
    }
    env.update(
        HOME=str(home),
        AGENT_LSP_BASE_URL=fake_openai.base_url,
        AGENT_LSP_API_KEY="test-key",
        AGENT_LSP_MODEL="fake-model",
    )
    return env


def which_or_skip(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI but not installed")
        pytest.skip(f"{name} not installed")
    return path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist (`-n 2 --dist loadgroup`, see README): the real editors and the real
    model server each run in one worker, one test at a time; everything else spreads."""
    for item in items:
        parts = Path(str(item.path)).parts
        for folder in ("editors", "realmodel"):
            if "tests" in parts and folder in parts:
                item.add_marker(pytest.mark.xdist_group(folder))
