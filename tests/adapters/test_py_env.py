"""Which Python runs a project's tests: its .venv found from a subfolder, a pyenv version named
by .python-version, and the fallback to agent-lsp's own Python, which the report names."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters import PosixShell, PytestRunner, TestReport, describe_project, python_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _linked_python(folder: Path) -> Path:
    """A ``bin/python`` that is agent-lsp's interpreter under another name (so it has pytest)."""
    (folder / "bin").mkdir(parents=True)
    (folder / "bin/python").symlink_to(sys.executable)
    return folder / "bin/python"


def _project(root: Path, python: Path | str) -> Path:
    """A pytest project whose second test checks which interpreter runs it."""
    return _write(
        root,
        {
            "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['tests']\n",
            "tests/test_env.py": f"""\
                import sys


                def test_runs():
                    assert 1 + 1 == 2


                def test_interpreter():
                    assert sys.executable == {str(python)!r}
                """,
        },
    )


async def _run(project: Path) -> TestReport:
    return await PytestRunner().run(project, project, [], shell=PosixShell(), timeout=120)


async def test_the_repository_venv_is_found_from_a_subfolder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    python = _linked_python(repo / ".venv")
    backend = _project(repo / "backend", python)
    assert python_env(backend).python == str(python)
    assert "virtualenv: ../.venv (in use)" in describe_project(backend)
    report = await _run(backend)
    assert report.ok, report.output
    assert (report.passed, report.failed, report.errors) == (2, 0, 0)
    assert report.command[0] == str(python)
    assert report.hint is None


async def test_python_version_names_a_pyenv_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyenv_root = tmp_path / "pyenv"
    python = _linked_python(pyenv_root / "versions/3.99.2")
    _linked_python(pyenv_root / "versions/3.99.10")
    newest = pyenv_root / "versions/3.99.10/bin/python"
    monkeypatch.setenv("PYENV_ROOT", str(pyenv_root))
    project = _project(tmp_path / "p", newest)
    (project / ".python-version").write_text("3.99\n")
    env = python_env(project)
    assert (env.python, env.source) == (str(newest), ".python-version (pyenv 3.99.10)")
    (project / ".python-version").write_text("3.99.2\n")
    assert python_env(project).python == str(python)
    (project / ".python-version").write_text("3.99\n")
    report = await _run(project)
    assert report.ok, report.output
    assert report.hint is None


async def test_no_environment_names_the_fallback_interpreter(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", sys.executable)
    report = await _run(project)
    assert report.ok, report.output
    assert (report.passed, report.failed) == (2, 0)
    assert report.hint is not None
    assert report.hint.startswith(f"no virtualenv found in {project} or above (looked for ")
    assert report.hint.endswith(
        f"tests ran with agent-lsp's own Python {sys.executable}: create .venv with the "
        "project's test dependencies or set VIRTUAL_ENV"
    )
    assert f"; hint: {report.hint}" in report.summary()
    assert f"using {sys.executable}" in describe_project(project)


_RUN_ADAPTER = """\
import asyncio, json, sys
from pathlib import Path
from adapters import PosixShell, PytestRunner

root = Path(sys.argv[1])
report = asyncio.run(PytestRunner().run(root, root, [], shell=PosixShell(), timeout=120))
failures = [[f.test_id, f.message] for f in report.failures]
print(json.dumps([report.passed, report.failed, report.errors, report.hint, failures]))
"""


def _bare_python(folder: Path) -> Path:
    """A Python without pytest: a venv of the base interpreter, no site packages."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin/python"
    if subprocess.run([str(python), "-c", "import pytest"], check=False).returncode == 0:
        pytest.skip("the base interpreter has pytest")
    return python


def _adapter_under(python: Path, project: Path) -> list[object]:
    proc = subprocess.run(
        [str(python), "-c", _RUN_ADAPTER, str(project)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(project.parent)},
    )
    return json.loads(proc.stdout)


async def test_fallback_without_pytest_is_one_clear_error(tmp_path: Path) -> None:
    agent_python = _bare_python(tmp_path / "agent-env")
    project = _project(tmp_path / "p", agent_python)
    passed, failed, errors, hint, failures = await asyncio.to_thread(
        _adapter_under, agent_python, project
    )
    missing = (
        f"pytest is not installed in {agent_python}: run `{agent_python} -m pip install pytest`"
    )
    assert (passed, failed, errors) == (0, 0, 1)
    assert isinstance(hint, str)
    assert hint.startswith(f"{missing}; no virtualenv found in {project} or above")
    assert failures == [["pytest", hint]]


def test_outside_a_repository_the_enclosing_project_is_searched(tmp_path: Path) -> None:
    project = _write(tmp_path / "proj", {"pyproject.toml": "[project]\nname = 'p'\n"})
    python = _linked_python(project / "venv")
    assert python_env(project / "src/pkg").python == str(python)
    stray = _write(tmp_path / "loose", {"sub/test_a.py": ""})
    _linked_python(stray / ".venv")  # a parent without any project marker is not the project
    assert python_env(stray / "sub").source == "agent-lsp's own Python"
