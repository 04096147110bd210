"""The package a user installs: its distribution name, its command and the README's install line.

`agent-lsp` on PyPI belongs to an unrelated project, so the distribution has a name of its own
while the command and the import packages keep the product's name.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "agent-lsp-editor"
TAKEN = {"agent-lsp", "agent_lsp", "agentlsp"}  # an unrelated MCP server on PyPI


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("*.whl")
    return built


def _wheel_file(wheel: Path, suffix: str) -> str:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(suffix)]
        return z.read(name).decode()


def test_the_distribution_has_a_name_of_its_own_and_installs_the_agent_lsp_command(
    wheel: Path,
) -> None:
    meta = Parser().parsestr(_wheel_file(wheel, ".dist-info/METADATA"))
    assert meta["Name"] == DISTRIBUTION
    assert re.sub(r"[-_.]+", "", meta["Name"].lower()) not in {
        re.sub(r"[-_.]+", "", t) for t in TAKEN
    }
    entry_points = _wheel_file(wheel, ".dist-info/entry_points.txt")
    assert "agent-lsp = agent_lsp.cli.main:main" in entry_points
    with zipfile.ZipFile(wheel) as z:
        tops = {n.split("/", 1)[0] for n in z.namelist() if ".dist-info/" not in n}
    assert tops == {"agent_lsp", "adapters"}


def test_the_readme_installs_the_distribution_it_names() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", install, re.S)
    lines = [line for block in commands for line in block.splitlines()]
    installs = [line for line in lines if re.search(r"\b(install)\b", line)]
    assert installs, install
    for line in installs:
        if "apt" in line:
            continue
        assert DISTRIBUTION in line, line
        assert not re.search(r"install agent-lsp(\s|$)", line), line


@pytest.mark.slow
def test_the_readme_python_only_install_line_works_in_a_fresh_environment(
    wheel: Path, tmp_path: Path
) -> None:
    """The README's "Python alone" line, with the built wheel standing in for the index name."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    venv = home / ".local/share/agent-lsp"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(venv / "bin/pip"), "install", "-q", str(wheel)],
        check=True,
        timeout=1200,
        env=env,
    )
    link = home / ".local/bin/agent-lsp"
    link.parent.mkdir(parents=True)
    link.symlink_to(venv / "bin/agent-lsp")
    done = subprocess.run(
        [str(link), "--version"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agent-lsp 0.1.0"
