"""Which Python runs a project's tests: virtualenvs, environment managers and hints."""

from __future__ import annotations

import dataclasses
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from adapters.pyfind import hatch_path, pdm_python, project_dirs, pyenv_python
from adapters.results import CommandResult, TestReport, environment_report

__all__ = [
    "FALLBACK",
    "PythonEnv",
    "child_env",
    "find_virtualenv",
    "finish_report",
    "missing_module_hint",
    "python_env",
    "python_hint",
    "venv_python",
]

VENV_NAMES = (".venv", "venv", "env", ".env")
FALLBACK = "agent-lsp's own Python"
LOOKED_FOR = "VIRTUAL_ENV, .venv, venv, env, hatch's path, .pdm-python, .python-version"
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
    root: Path | None = None  # the folder the environment was looked for from

    @property
    def fallback(self) -> bool:
        """True when no environment of the project was found: agent-lsp's own Python runs."""
        return self.source == FALLBACK

    def fallback_hint(self) -> str | None:
        """Names the interpreter a project without an environment ran with, and what to do."""
        if not self.fallback:
            return None
        where = f" in {self.root} or above" if self.root is not None else ""
        return (
            f"no virtualenv found{where} (looked for {LOOKED_FOR}); tests ran with "
            f"agent-lsp's own Python {self.python}: create .venv with the project's test "
            "dependencies or set VIRTUAL_ENV"
        )

    def _venv_label(self) -> str:
        if self.venv is None:
            return "none"
        if self.root is None:
            return self.venv.name
        return os.path.relpath(self.venv, self.root.resolve()).replace(os.sep, "/")

    def describe(self) -> str:
        """E.g. ``virtualenv: .venv (in use)`` or ``virtualenv: none (uv.lock: run `uv sync`)``."""
        if self.venv is not None:
            used = self.python == venv_python(self.venv)
            state = "in use" if used else f"present but not used; tests use {self.source}"
            return f"virtualenv: {self._venv_label()} ({state})"
        if self.source == "VIRTUAL_ENV":
            return f"virtualenv: active VIRTUAL_ENV {os.environ.get('VIRTUAL_ENV', '')}"
        if self.manager is not None:
            return f"virtualenv: none in the project ({self.manager}: `{self.manager_command}`)"
        if self.fallback:
            return f"virtualenv: none found (looked for {LOOKED_FOR}; using {self.python})"
        return f"interpreter from {self.source}"

    def hint(self) -> str | None:
        """A next step when the environment probably explains failing tests."""
        if self.venv is not None and self.python != venv_python(self.venv):
            return (
                f"the project's virtualenv {self._venv_label()}/ is not used (tests ran with "
                f"{self.python} from {self.source}); deactivate the other environment or "
                "restart agent-lsp from the project's environment"
            )
        if self.venv is None and self.manager and self.source not in ("VIRTUAL_ENV", "explicit"):
            return (
                f"{self.manager} project without an in-project virtualenv: run "
                f"`{self.manager_command}` (or activate its environment) so tests run "
                f"with the project's dependencies instead of {self.python}"
            )
        return self.fallback_hint()


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
    """The project's own virtualenv (``.venv``, ``venv``, ``env``, hatch's in-project
    ``path``), in ``root`` or the folders above it up to the repository's top; or None."""
    for folder in project_dirs(root):
        hatch = hatch_path(folder)
        candidates = [*(folder / name for name in VENV_NAMES), *([hatch] if hatch else [])]
        for candidate in candidates:
            if candidate.is_dir() and _is_venv(candidate):
                return candidate
    return None


def _manager(root: Path) -> tuple[str, str] | None:
    for folder in project_dirs(root):
        for marker, name, command in _MANAGERS:
            if (folder / marker).is_file():
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
    """Choose the interpreter: explicit, an active VIRTUAL_ENV, the project's own virtualenv
    (here or above, up to the repository's top), pdm's ``.pdm-python``, the pyenv version of
    ``.python-version``; else agent-lsp's own Python (:attr:`PythonEnv.fallback`)."""
    venv = find_virtualenv(root)
    found = _manager(root)
    manager, command = found if found else (None, None)

    def env(python: str, source: str) -> PythonEnv:
        return PythonEnv(python, source, venv, manager, command, root)

    if explicit:
        return env(explicit, "explicit")
    active = os.environ.get("VIRTUAL_ENV")
    if active:
        python = venv_python(Path(active))
        if Path(python).is_file():
            if venv is not None and Path(active).resolve() == venv.resolve():
                return env(venv_python(venv), venv.name)
            return env(python, "VIRTUAL_ENV")
    if venv is not None:
        return env(venv_python(venv), venv.name)
    pdm = pdm_python(root)
    if pdm is not None:
        return env(pdm, ".pdm-python")
    pyenv = pyenv_python(root)
    if pyenv is not None:
        return env(pyenv[0], f".python-version (pyenv {pyenv[1]})")
    return env(sys.executable, FALLBACK)


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


def finish_report(
    report: TestReport, result: CommandResult, env: PythonEnv, module: str
) -> TestReport:
    """``report`` with the environment's hint. An interpreter that is missing or lacks the
    runner ``module`` gives one clear error naming it (not the counts of a broken run); a
    run with agent-lsp's own Python, for want of a project environment, always says so."""
    if report.ok:
        hint = env.fallback_hint()
        return dataclasses.replace(report, hint=hint) if hint else report
    broken = python_hint(result, env.python, module)
    if broken is not None:
        if env.fallback:
            broken = f"{broken}; {env.fallback_hint()}"
        return dataclasses.replace(
            environment_report(report.runner, broken, report.command),
            duration=report.duration,
            output=report.output,
        )
    hint = env.hint()
    return dataclasses.replace(report, hint=hint) if hint else report


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
