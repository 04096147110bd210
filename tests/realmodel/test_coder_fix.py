"""A real fix by a real small coder model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, on the CPU):
`agent-lsp run` on a small project whose test fails, as a user runs it, and the project's own
tests pass afterwards, run natively, with the test file untouched."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.realmodel.conftest import CODER_CONTEXT, LlamaServer
from tests.realmodel.test_realmodel import environment

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

SOURCE = '''\
def share(part: float, whole: float) -> float:
    """The share of `part` in `whole`: 0.25 for 1 of 4."""
    return part / whole


def as_percent(part: float, whole: float) -> float:
    return round(share(part, whole) * 100, 1)
'''
TESTS = """\
import pytest
from shares import as_percent, share


def test_share():
    assert share(1, 4) == 0.25


def test_an_empty_whole_is_a_value_error():
    with pytest.raises(ValueError):
        share(2, 0)


def test_as_percent():
    assert as_percent(1, 8) == 12.5
"""
TASK = (
    "test_shares.py fails: share() with a whole of 0 must raise ValueError, not "
    "ZeroDivisionError. Fix shares.py; do not change the tests."
)


def test_a_real_small_model_fixes_a_failing_test(coder_server: LlamaServer, tmp_path: Path) -> None:
    project = tmp_path / "work" / "shares"
    project.mkdir(parents=True)
    (project / "shares.py").write_text(SOURCE)
    (project / "test_shares.py").write_text(TESTS)
    (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    tests_before = hashlib.sha256((project / "test_shares.py").read_bytes()).hexdigest()
    env = environment(tmp_path / "home", coder_server)
    config = tmp_path / "home" / ".config" / "agent-lsp" / "config.toml"
    config.write_text(
        config.read_text()
        .replace("maxTokens = 96", "maxTokens = 1024")
        .replace("timeout = 300", "timeout = 900")
        .replace(f"contextWindow = {8192}", f"contextWindow = {CODER_CONTEXT}")
        .replace('profile = "full"', 'profile = "auto"')  # small: the served window
    )
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "run", TASK, "--root", str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=2200,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    report = f"{done.stdout}\n{done.stderr}\n--- server ---\n"
    report += coder_server.log.read_text(errors="replace")[-3000:]
    assert done.returncode == 0, report
    assert "■ completed" in done.stdout, report
    native = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert native.returncode == 0, native.stdout + report
    assert hashlib.sha256((project / "test_shares.py").read_bytes()).hexdigest() == tests_before
