"""The benchmark's tasks and their judge.

A task is a folder under bench/effect/tasks/: `task.json` (what the harness is told, the files
it is given, the test files, the diagnostic an editor shows) and `project/` (the tiny project).
Its reference fix is under bench/effect/reference/<task>/ (only `--check-tasks` reads it; it is
never copied into a harness's folder).

The judge looks from outside: after a run it copies the project's files (not node_modules, .git,
caches or a harness's own folders) into a fresh folder and runs the project's tests there itself,
natively; the task is solved when they pass and no protected file (a test file, a test
configuration, a manifest) was changed, added or deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = HERE / "tasks"
REFERENCE = HERE / "reference"
RUNNERS = ("pytest", "unittest", "jest", "vitest", "go")
KINDS = (
    "bug from a failing test",
    "fix from a diagnostic",
    "feature from its tests",
    "two-file fix",
)
# Never part of a project's state: dependencies, VCS, caches, the harnesses' own folders.
IGNORED_DIRS = frozenset(
    {
        "node_modules",
        ".git",
        "__pycache__",
        ".pytest_cache",
        ".agent-lsp",
        ".mypy_cache",
        ".ruff_cache",
        ".venv",
    }
)
IGNORED_PREFIXES = (".aider",)
# Files a harness must not touch: tests, test configuration and manifests.
PROTECTED_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        "pyproject.toml",
        "setup.cfg",
        "tox.ini",
        "package.json",
        "go.mod",
        "go.sum",
    }
)
PROTECTED_PREFIXES = ("jest.config.", "vitest.config.", "vite.config.")


class TaskError(Exception):
    """A task folder that is not well formed (said in one line)."""


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int  # 1-based, as a user reads it
    message: str
    source: str


@dataclass(frozen=True)
class Task:
    name: str
    title: str
    kind: str
    runner: str
    text: str
    files: tuple[str, ...]
    tests: tuple[str, ...]
    diagnostic: Diagnostic | None
    folder: Path

    @property
    def project(self) -> Path:
        return self.folder / "project"

    @property
    def language(self) -> str:
        return {"jest": "javascript", "vitest": "javascript", "go": "go"}.get(self.runner, "python")


def _strings(data: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise TaskError(f"{where}: '{key}' must be a non-empty list of file names")
    return tuple(str(v) for v in value)  # pyright: ignore[reportUnknownVariableType]


def load_task(folder: Path) -> Task:
    where = f"{folder.name}/task.json"
    try:
        data = json.loads((folder / "task.json").read_text())
    except (OSError, ValueError) as exc:
        raise TaskError(f"{where}: {exc}") from None
    if not isinstance(data, dict):
        raise TaskError(f"{where}: not a JSON object")
    raw: dict[str, object] = data  # pyright: ignore[reportUnknownVariableType]
    for key in ("title", "kind", "runner", "task"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise TaskError(f"{where}: '{key}' must be a non-empty string")
    if raw["runner"] not in RUNNERS:
        raise TaskError(f"{where}: runner {raw['runner']!r} is not one of {', '.join(RUNNERS)}")
    if raw["kind"] not in KINDS:
        raise TaskError(f"{where}: kind {raw['kind']!r} is not one of {'; '.join(KINDS)}")
    files, tests = _strings(raw, "files", where), _strings(raw, "tests", where)
    project = folder / "project"
    for name in files + tests:
        if not (project / name).is_file():
            raise TaskError(f"{where}: {name} is not a file of project/")
    diagnostic = None
    diag = raw.get("diagnostic")
    if diag is not None:
        if not isinstance(diag, dict):
            raise TaskError(f"{where}: 'diagnostic' must be an object")
        d: dict[str, object] = diag  # pyright: ignore[reportUnknownVariableType]
        file, line, message, source = (
            d.get("file"),
            d.get("line"),
            d.get("message"),
            d.get("source"),
        )
        if not (
            isinstance(file, str)
            and isinstance(line, int)
            and isinstance(message, str)
            and isinstance(source, str)
        ):
            raise TaskError(f"{where}: 'diagnostic' needs file, line, message and source")
        path = project / file
        if not path.is_file() or not 1 <= line <= len(path.read_text().splitlines()):
            raise TaskError(f"{where}: the diagnostic's {file}:{line} is not a line of project/")
        diagnostic = Diagnostic(file, line, message, source)
    return Task(
        name=folder.name,
        title=str(raw["title"]),
        kind=str(raw["kind"]),
        runner=str(raw["runner"]),
        text=str(raw["task"]),
        files=files,
        tests=tests,
        diagnostic=diagnostic,
        folder=folder,
    )


def load_tasks(root: Path = TASKS, names: list[str] | None = None) -> list[Task]:
    """The tasks under `root` (all, or those named, in the order given)."""
    found = {p.name: p for p in sorted(root.iterdir()) if (p / "task.json").is_file()}
    if names:
        unknown = [n for n in names if n not in found]
        if unknown:
            raise TaskError(f"no such task: {', '.join(unknown)} (have: {', '.join(found)})")
        return [load_task(found[n]) for n in names]
    return [load_task(p) for p in found.values()]


# --- the project's files, their snapshot and the protected ones ----------------------------


def project_files(root: Path) -> list[str]:
    """The project's own files below `root` (relative, sorted), without dependencies, caches,
    version control and the harnesses' folders."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [
            d for d in dirnames if d not in IGNORED_DIRS and not d.startswith(IGNORED_PREFIXES)
        ]
        for name in filenames:
            if name.startswith(IGNORED_PREFIXES) or name.endswith(".pyc"):
                continue
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            out.append(path.relative_to(root).as_posix())
    return sorted(out)


def snapshot(root: Path) -> dict[str, str]:
    """Every project file by the sha256 of its bytes."""
    return {
        rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in project_files(root)
    }


def is_protected(rel: str) -> bool:
    """A test file, a test configuration or a manifest: the judge's ground, not the harness's."""
    name = rel.rsplit("/", 1)[-1]
    if name in PROTECTED_NAMES or name.startswith(PROTECTED_PREFIXES):
        return True
    if name.endswith(".py"):
        return name.startswith("test_") or name.endswith("_test.py")
    if name.endswith("_test.go"):
        return True
    stem = name.rsplit(".", 1)[0]
    return stem.endswith((".test", ".spec")) or "__tests__" in rel.split("/")


@dataclass(frozen=True)
class Changes:
    sources: tuple[str, ...]  # changed, added or deleted files that are not protected
    protected: tuple[str, ...]  # changed, added or deleted protected files


def changes(before: dict[str, str], after: dict[str, str]) -> Changes:
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    return Changes(
        sources=tuple(p for p in changed if not is_protected(p)),
        protected=tuple(p for p in changed if is_protected(p)),
    )


# --- preparing a copy, running the tests natively ------------------------------------------


@dataclass(frozen=True)
class Toolchain:
    """What the judge runs the tests with (the bench's own, never a harness's)."""

    python: str
    cache: Path  # node_modules installs, Go's caches

    def node_modules(self, runner: str) -> Path:
        return self.cache / "node" / runner / "node_modules"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GO"))}
        env.update(
            GOCACHE=str(self.cache / "go" / "build"),
            GOPATH=str(self.cache / "go" / "path"),
            GOPROXY="off",
            GOFLAGS="",
            GOTOOLCHAIN="local",
            CI="1",
            PYTHONDONTWRITEBYTECODE="1",
        )
        return env


def suite_command(runner: str, python: str = "python") -> list[str]:
    """The project's test command, as the judge runs it (and as a peer is told to)."""
    return {
        "pytest": [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        "unittest": [python, "-m", "unittest", "-v"],
        "jest": ["node", "node_modules/jest/bin/jest.js", "--ci", "--watchman=false"],
        "vitest": ["node", "node_modules/vitest/vitest.mjs", "run"],
        "go": ["go", "test", "./..."],
    }[runner]


def shell_test_command(runner: str) -> str:
    """The test command as a user types it (what aider's --test-cmd gets)."""
    return {
        "pytest": "python -m pytest -q",
        "unittest": "python -m unittest -v",
        "jest": "npx jest",
        "vitest": "npx vitest run",
        "go": "go test ./...",
    }[runner]


def link_node_modules(cache: Path, project: Path) -> None:
    """A real node_modules folder whose entries link to the cached install."""
    target = project / "node_modules"
    target.mkdir()
    for entry in cache.iterdir():
        (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


def copy_project(task: Task, dest: Path, tools: Toolchain, source: Path | None = None) -> Path:
    """A fresh copy of the task's project (or of `source`'s project files) at `dest`, with the
    runner's dependencies linked in."""
    src = source or task.project
    dest.mkdir(parents=True)
    for rel in project_files(src):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dest / rel)
    if task.runner in ("jest", "vitest"):
        link_node_modules(tools.node_modules(task.runner), dest)
    return dest


def git_init(root: Path) -> None:
    """A repository with the task as its first commit (as a user's project is)."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-qm", "task"],
    ):
        if argv[1] == "add":
            (root / ".git" / "info" / "exclude").write_text("node_modules\n__pycache__/\n")
        subprocess.run(argv, cwd=root, env=env, capture_output=True, check=True, timeout=60)


@dataclass
class SuiteRun:
    passed: bool
    exit_code: int | None  # None: killed at the timeout
    seconds: float
    output: str = ""


def run_tests(task: Task, root: Path, tools: Toolchain, timeout: float = 300) -> SuiteRun:
    """The task's tests in `root`, run natively (own process group, killed whole at the end)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        suite_command(task.runner, tools.python),
        cwd=root,
        env=tools.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = None
    text = out.decode(errors="replace")
    return SuiteRun(code == 0, code, time.monotonic() - started, text[-4000:])


@dataclass
class Verdict:
    solved: bool
    tests: SuiteRun
    changes: Changes
    diff_files: list[str] = field(default_factory=list[str])

    @property
    def why(self) -> str:
        if self.changes.protected:
            return "tests changed: " + ", ".join(self.changes.protected)
        if self.solved:
            return "solved"
        if not self.changes.sources:
            return "no edit"
        return "tests fail"


def judge(
    task: Task, workdir: Path, before: dict[str, str], tools: Toolchain, scratch: Path
) -> Verdict:
    """Whether the run in `workdir` solved `task`: its tests pass in a fresh copy of what the
    run left (in `scratch`, which must not exist) and no protected file changed."""
    diff = changes(before, snapshot(workdir))
    fresh = copy_project(task, scratch, tools, source=workdir)
    tests = run_tests(task, fresh, tools)
    solved = tests.passed and not diff.protected
    return Verdict(solved, tests, diff)


# --- the tasks' own check -------------------------------------------------------------------


@dataclass
class TaskCheck:
    task: str
    failing_before: bool
    passing_after: bool
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.failing_before and self.passing_after and not self.problem


def check_task(task: Task, tools: Toolchain, scratch: Path) -> TaskCheck:
    """The task fails as shipped and is solved by its reference fix, as judged by `judge`."""
    reference = REFERENCE / task.name
    fixes = project_files(reference) if reference.is_dir() else []
    if not fixes:
        return TaskCheck(task.name, False, False, f"no reference fix in {reference}")
    protected = [f for f in fixes if is_protected(f)]
    if protected:
        return TaskCheck(task.name, False, False, f"the reference changes tests: {protected}")
    work = copy_project(task, scratch / "work", tools)
    before = snapshot(work)
    shipped = judge(task, work, before, tools, scratch / "judge-before")
    for rel in fixes:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(reference / rel, work / rel)
    fixed = judge(task, work, before, tools, scratch / "judge-after")
    problem = ""
    if shipped.tests.passed:
        problem = "the tests pass before the fix"
    elif not fixed.solved:
        problem = (
            f"the reference fix does not solve it ({fixed.why}):\n{fixed.tests.output[-1500:]}"
        )
    elif sorted(fixed.changes.sources) != sorted(fixes):
        problem = f"the reference changes {fixed.changes.sources}, expected {fixes}"
    return TaskCheck(task.name, not shipped.tests.passed, fixed.solved, problem)
