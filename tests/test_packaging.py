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


def _install_lines(text: str) -> list[str]:
    commands = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [line for block in commands for line in block.splitlines()]
    return [line for line in lines if re.search(r"\binstall\b", line) and "apt" not in line]


def _install_section() -> tuple[str, str]:
    """The README's install section: what works today, and what waits for the publication."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    today, published = install.split("Once `agent-lsp-editor` is published on PyPI", 1)
    return today, published


def test_the_readme_leads_with_an_install_that_works_before_the_publication() -> None:
    # The distribution is not on PyPI yet: the first lines install from a checkout (a path or
    # its git URL); the registry's name only under "once published".
    today, published = _install_section()
    first = _install_lines(today)
    assert first, today
    assert re.fullmatch(r"uv tool install \.\s+# or: pipx install \..*", first[0]), first[0]
    for line in first:
        assert DISTRIBUTION not in line, line
        assert re.search(r"install (\.|/path/to/checkout)(\s|$)", line), line
    later = _install_lines(published)
    assert later, published
    for line in later:
        assert DISTRIBUTION in line, line
        assert not re.search(r"install agent-lsp(\s|$)", line), line


@pytest.mark.slow
def test_the_readme_python_only_install_line_works_in_a_fresh_environment(tmp_path: Path) -> None:
    """The README's "Python alone" lines, run as written, the checkout being this one."""
    today, _ = _install_section()
    block = re.findall(r"```sh\n(.*?)```", today, re.S)[1]
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": f"{home}/.local/bin:/usr/bin:/bin"}
    script = block.replace("/path/to/checkout", str(ROOT)).replace("python3 ", f"{sys.executable} ")
    done = subprocess.run(
        ["bash", "-ec", script], capture_output=True, text=True, timeout=1500, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "agent-lsp 0.1.0"
