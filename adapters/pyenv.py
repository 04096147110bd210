"""Which Python runs a project's tests: virtualenvs, environment managers and hints."""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from adapters.results import CommandResult

__all__ = [
    "PythonEnv",
    "child_env",
    "find_virtualenv",
    "missing_module_hint",
    "python_env",
    "python_hint",
    "venv_python",
]

VENV_NAMES = (".venv", "venv", "env", ".env")
# lockfile or marker -> (manager, command that creates the project's environment)
_MANAGERS = (
    ("uv.lock", "uv", "uv sync"),
    ("poetry.lock", "poetry", "poetry install"),
    ("Pipfile.lock", "pipenv", "PIPENV_VENV_IN_PROJECT=1 pipenv install --dev"),
    ("Pipfile", "pipenv", "PIPENV_VENV_IN_PROJECT=1 pipenv install --dev"),
    ("pdm.lock", "pdm", "pdm install"),
)

_TOOL_COMMANDS = {"poetry": "poetry install", "uv": "uv sync", "pdm": "pdm install"}


@dataclass(frozen=True)
class PythonEnv:
    """The interpreter chosen for a project and why."""

    python: str
    source: str  # "explicit", "VIRTUAL_ENV", ".venv", "venv", ... or "agent-lsp's own Python"
    venv: Path | None  # the virtualenv inside the project, used or not
    manager: str | None  # uv, poetry, pipenv or pdm when their markers are present
    manager_command: str | None

    def describe(self) -> str:
        """E.g. ``virtualenv: .venv (in use)`` or ``virtualenv: none (uv.lock: run `uv sync`)``."""
        if self.venv is not None:
            used = self.python == venv_python(self.venv)
            state = "in use" if used else f"present but not used; tests use {self.source}"
            return f"virtualenv: {self.venv.name} ({state})"
        if self.source == "VIRTUAL_ENV":
            return f"virtualenv: active VIRTUAL_ENV {os.environ.get('VIRTUAL_ENV', '')}"
        if self.manager is not None:
            return f"virtualenv: none in the project ({self.manager}: `{self.manager_command}`)"
        return "virtualenv: none found (looked for .venv, venv, env, VIRTUAL_ENV)"

    def hint(self) -> str | None:
        """A next step when the environment probably explains failing tests."""
        if self.venv is not None and self.python != venv_python(self.venv):
            return (
                f"the project's virtualenv {self.venv.name}/ is not used (tests ran with "
                f"{self.python} from {self.source}); deactivate the other environment or "
                "restart agent-lsp from the project's environment"
            )
        if self.venv is None and self.manager and self.source not in ("VIRTUAL_ENV", "explicit"):
            return (
                f"{self.manager} project without an in-project virtualenv: run "
                f"`{self.manager_command}` (or activate its environment) so tests run "
                f"with the project's dependencies instead of {self.python}"
            )
        return None


def venv_python(venv: Path) -> str:
    """The interpreter inside a virtualenv (POSIX or Windows layout)."""
    windows = venv / "Scripts" / "python.exe"
    return str(
        windows if windows.is_file() and not (venv / "bin").is_dir() else venv / "bin/python"
    )


def _is_venv(path: Path) -> bool:
    if (path / "pyvenv.cfg").is_file():
        return True
    return (path / "bin" / "python").is_file() or (path / "Scripts" / "python.exe").is_file()


def find_virtualenv(root: Path) -> Path | None:
    """The project's own virtualenv folder (``.venv``, ``venv``, ...), or None."""
    for name in VENV_NAMES:
        candidate = root / name
        if candidate.is_dir() and _is_venv(candidate):
            return candidate
    return None


def _manager(root: Path) -> tuple[str, str] | None:
    for marker, name, command in _MANAGERS:
        if (root / marker).is_file():
            return name, command
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    tool = data.get("tool")
    if isinstance(tool, dict):
        for name in ("poetry", "uv", "pdm"):
            if name in tool:
                return name, _TOOL_COMMANDS[name]
    return None


def python_env(root: Path, explicit: str | None = None) -> PythonEnv:
    """Choose the interpreter: explicit, then an active VIRTUAL_ENV, then the project's own
    virtualenv, then the Python running agent-lsp."""
    venv = find_virtualenv(root)
    found = _manager(root)
    manager, command = found if found else (None, None)
    if explicit:
        return PythonEnv(explicit, "explicit", venv, manager, command)
    active = os.environ.get("VIRTUAL_ENV")
    if active:
        python = venv_python(Path(active))
        if Path(python).is_file():
            if venv is not None and Path(active).resolve() == venv.resolve():
                return PythonEnv(venv_python(venv), venv.name, venv, manager, command)
            return PythonEnv(python, "VIRTUAL_ENV", venv, manager, command)
    if venv is not None:
        return PythonEnv(venv_python(venv), venv.name, venv, manager, command)
    return PythonEnv(sys.executable, "agent-lsp's own Python", None, manager, command)


def missing_module_hint(output: str, module: str, python: str) -> str | None:
    """The install hint when ``output`` shows that ``python`` lacks ``module``."""
    if f"No module named {module}" in output or f"No module named '{module}'" in output:
        return f"{module} is not installed in {python}: run `{python} -m pip install {module}`"
    return None


def python_hint(result: CommandResult, python: str, module: str) -> str | None:
    """Actionable hint when ``python`` could not start or lacks the runner ``module``."""
    if result.exit_code in (126, 127) and not Path(python).is_file():
        return (
            f"the interpreter {python} does not exist: recreate the virtualenv or point "
            "VIRTUAL_ENV at a working one"
        )
    return missing_module_hint(result.output, module, python)


def child_env(run_root: Path) -> dict[str, str]:
    """The environment for a Python test run: no inherited pytest options, no bytecode
    files, the run folder (and its ``src/``) first on the import path."""
    env = dict(os.environ)
    for key in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST"):
        env.pop(key, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    paths = [str(run_root)]
    if (run_root / "src").is_dir():
        paths.append(str(run_root / "src"))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env
