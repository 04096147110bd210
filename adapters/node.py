"""Node projects: package.json, the JS test runner, package manager, node_modules and hints."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

__all__ = [
    "NodeProject",
    "WrapperRun",
    "js_regex_escape",
    "node_env",
    "node_project",
    "split_targets",
    "wrapper_run",
]

_CONFIG_EXTS = ("ts", "mts", "cts", "js", "mjs", "cjs", "json")
# lockfile -> (manager, command that installs exactly what the lockfile says)
_LOCKFILES = (
    ("pnpm-lock.yaml", "pnpm", "pnpm install --frozen-lockfile"),
    ("yarn.lock", "yarn", "yarn install --frozen-lockfile"),
    ("bun.lock", "bun", "bun install --frozen-lockfile"),
    ("bun.lockb", "bun", "bun install --frozen-lockfile"),
    ("package-lock.json", "npm", "npm ci"),
    ("npm-shrinkwrap.json", "npm", "npm ci"),
)
_RUNNERS = ("vitest", "jest")
# Node's own test runner in a test script: `node --test`, `node --import tsx --test test/`.
_NODE_TEST = re.compile(r"(?:^|[\s;&|])node(?:\.exe)?\s+(?:\S+\s+)*?--test(?:\s|$|=)")
_MISSING_PACKAGE = re.compile(
    r"Preset (\S+) not found|Test environment (\S+) cannot be found"
    r"|Module (\S+) in the transform option was not found"
    r"|Jest: '(\S+)' is required for the TypeScript configuration files"  # jest.config.ts
)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return cast("dict[str, Any]", data) if isinstance(data, dict) else None


def _str_dict(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    items = cast("dict[object, object]", value).items()
    return {str(k): str(v) for k, v in items}


@dataclass(frozen=True)
class NodeProject:
    """What a folder with a package.json declares and has installed."""

    folder: Path
    package: dict[str, Any]
    runner: str | None  # "jest", "vitest" or "node-test" (`node --test`)
    runner_reason: str
    manager: str  # npm, yarn, pnpm or bun
    lockfile: Path | None
    install_command: str
    workspaces: bool

    @property
    def test_script(self) -> str:
        return _str_dict(self.package.get("scripts")).get("test", "")

    def find_bin(self, name: str, start: Path | None = None) -> Path | None:
        """``node_modules/.bin/<name>`` in ``start`` (default: the project folder) or any
        folder above it, as node and npm look for them (a workspace's hoisted runners sit in
        its root's node_modules, with folders without package.json in between)."""
        folder = start or self.folder
        for candidate in (folder, *folder.parents):
            for suffix in (".cmd", "") if os.name == "nt" else ("",):
                path = candidate / "node_modules" / ".bin" / f"{name}{suffix}"
                if path.exists():
                    return path
        return None

    def setup_hint(self, name: str, run_root: Path) -> str | None:
        """Why ``name`` cannot run here, with the command that fixes it; None if it can."""
        if shutil.which("node") is None:
            return "node is not on PATH: install Node.js 18+ (e.g. `apt-get install nodejs`)"
        if name == "node-test" or self.find_bin(name, run_root) or self.find_bin(name):
            return None
        where = self.install_folder
        if not any((p / "node_modules").is_dir() for p in (self.folder, where)):
            return f"node_modules is missing: run `{self.install_command}` in {where}"
        return (
            f"{name} is not installed in node_modules: run `{self.install_command}` in {where}"
            + ("" if name in self.dependencies() else f" (or add it: `{self._add(name)}`)")
        )

    @property
    def install_folder(self) -> Path:
        """Where the install command runs: the lockfile's folder, else the workspace root
        that declares this package, else the project folder."""
        if self.lockfile is not None:
            return self.lockfile.parent
        return _workspace_root(self.folder) or self.folder

    def dependencies(self) -> dict[str, str]:
        deps = _str_dict(self.package.get("dependencies"))
        deps.update(_str_dict(self.package.get("devDependencies")))
        return deps

    def describe(self) -> str:
        lock = f", lockfile {self.lockfile.name}" if self.lockfile else ", no lockfile"
        spaces = ", workspaces" if self.workspaces else ""
        modules = "present" if self.find_bin(self.runner or "") else "missing"
        if self.runner == "node-test":
            return f"Node project ({self.manager}); tests: node --test (found {self.runner_reason})"
        if self.runner is None:
            tests = "no jest or vitest found (looked at package.json and config files)"
        else:
            tests = f"{self.runner} (found {self.runner_reason})"
        return (
            f"Node project ({self.manager}{lock}{spaces}); tests: {tests}; "
            f"node_modules/.bin/{self.runner or 'runner'}: {modules}"
        )

    def node_options(self) -> str:
        """NODE_OPTIONS the project's test script relies on (ESM support in jest)."""
        flags = re.findall(r"--experimental-vm-modules|--no-warnings", self.test_script)
        return " ".join(dict.fromkeys(flags))

    def output_hint(self, output: str) -> str | None:
        """A next step for a run that failed on a package the project's config names but
        node_modules lacks (a jest preset, test environment or transformer, or ts-node for a
        `jest.config.ts`)."""
        match = _MISSING_PACKAGE.search(output)
        if match is None:
            return None
        name = next(n for n in match.groups() if n)
        where = self.install_folder
        if name in self.dependencies():
            return f"{name} is declared but not installed: run `{self.install_command}` in {where}"
        return (
            f"{name} is not installed: add it (`{self._add(name)}`) or run "
            f"`{self.install_command}` in {where} if another package should bring it"
        )

    def _add(self, name: str) -> str:
        verb = {"npm": "npm install --save-dev", "yarn": "yarn add --dev"}
        return f"{verb.get(self.manager, self.manager + ' add -D')} {name}"


def runs_node_test(script: str) -> bool:
    """Whether a test script runs Node's own test runner (``node --test …``)."""
    return _NODE_TEST.search(script) is not None


def _runner(folder: Path, package: dict[str, Any]) -> tuple[str | None, str]:
    script = _str_dict(package.get("scripts")).get("test", "")
    mentioned = [name for name in _RUNNERS if re.search(rf"\b{name}\b", script)]
    if len(mentioned) == 1:
        return mentioned[0], f"scripts.test: {script!r}"
    if not mentioned and runs_node_test(script):
        return "node-test", f"scripts.test: {script!r}"
    wrapped = _wrapped_runner(folder, script)
    if wrapped is not None:
        return wrapped
    for name in _RUNNERS:
        for stem in (f"{name}.config", f"{name}.workspace"):
            for ext in _CONFIG_EXTS:
                if (folder / f"{stem}.{ext}").is_file():
                    return name, f"{stem}.{ext}"
    if isinstance(package.get("jest"), dict):
        return "jest", 'package.json "jest"'
    for key in ("devDependencies", "dependencies"):
        deps = _str_dict(package.get(key))
        for name in _RUNNERS:
            if name in deps:
                return name, f"{key} {name} {deps[name]}"
    return None, ""


def _workspace_root(folder: Path) -> Path | None:
    """The nearest folder above ``folder`` whose package.json declares workspaces (or that
    has pnpm-workspace.yaml), up to the repository's top; None without one."""
    for candidate in folder.parents:
        package = read_json(candidate / "package.json")
        if (package is not None and "workspaces" in package) or (
            candidate / "pnpm-workspace.yaml"
        ).is_file():
            return candidate
        if (candidate / ".git").exists():
            break
    return None


_SKIPPED_WORDS = frozenset({"npx", "cross-env", "dotenv", "exec", "--", "pnpm", "yarn", "run"})


def _bin_package(folder: Path, name: str) -> tuple[Path, dict[str, Any]] | None:
    """The installed package whose bin ``name`` is ``node_modules/.bin/<name>`` in ``folder``
    or a folder above it (the folder of its package.json, and what it says)."""
    for candidate in (folder, *folder.parents):
        link = candidate / "node_modules" / ".bin" / name
        if not link.exists():
            continue
        try:
            real = link.resolve()
        except OSError:
            return None
        for base in real.parents:
            package = read_json(base / "package.json")
            if package is not None and "name" in package:
                return base, package
            if base.name == "node_modules":
                return None
        return None
    return None


def _wrapped_runner(folder: Path, script: str) -> tuple[str, str] | None:
    """jest or vitest behind a wrapper the test script runs (``kcd-scripts test``,
    ``react-scripts test``): the script's command is a bin of an installed package that
    depends on exactly one of them, and that runner's bin is installed too."""
    words = [w for w in script.split() if not _ASSIGNMENT_WORD.match(w)]
    head = next((w for w in words if w not in _SKIPPED_WORDS and not w.startswith("-")), "")
    if not head or "/" in head or head in ("node", "npm"):
        return None
    found = _bin_package(folder, head)
    if found is None:
        return None
    _, package = found
    deps = {**_str_dict(package.get("peerDependencies")), **_str_dict(package.get("dependencies"))}
    runners = [name for name in _RUNNERS if name in deps]
    if len(runners) != 1:
        return None
    runner = runners[0]
    if not any((c / "node_modules" / ".bin" / runner).exists() for c in (folder, *folder.parents)):
        return None
    owner = str(package.get("name"))
    return runner, f"scripts.test: {script!r} runs {head} ({owner} depends on {runner})"


_ASSIGNMENT_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SCRIPT_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})


@dataclass(frozen=True)
class WrapperRun:
    """The wrapper command a test script runs (``kcd-scripts test``): its installed bin, the
    words after it and the variables assigned before it."""

    bin: Path
    args: tuple[str, ...]
    env: dict[str, str]


def wrapper_run(folder: Path, script: str) -> WrapperRun | None:
    """How ``script`` runs jest or vitest through a wrapper's bin (see ``_wrapped_runner``):
    None when it does not."""
    if _wrapped_runner(folder, script) is None:
        return None
    try:
        words = shlex.split(script)
    except ValueError:
        return None
    env: dict[str, str] = {}
    for index, word in enumerate(words):
        if _ASSIGNMENT_WORD.match(word):
            name, _, value = word.partition("=")
            env[name] = value
        elif word in _SKIPPED_WORDS or word.startswith("-"):
            continue
        else:
            found = _bin_path(folder, word)
            if found is None:
                return None
            rest: list[str] = []
            for following in words[index + 1 :]:
                if following in _SCRIPT_SEPARATORS:
                    break
                rest.append(following)
            return WrapperRun(found, tuple(rest), env)
    return None


def _bin_path(folder: Path, name: str) -> Path | None:
    for candidate in (folder, *folder.parents):
        link = candidate / "node_modules" / ".bin" / name
        if link.exists():
            return link
    return None


def _lockfile(folder: Path) -> tuple[Path | None, str, str]:
    top = _workspace_root(folder)
    for candidate in (folder, *folder.parents):
        for name, manager, command in _LOCKFILES:
            if (candidate / name).is_file():
                if manager == "yarn" and (candidate / ".yarnrc.yml").is_file():
                    command = "yarn install --immutable"
                return candidate / name, manager, command
        if candidate == top or (top is None and not (candidate.parent / "package.json").is_file()):
            break
    return None, "npm", "npm install"


def node_project(folder: Path) -> NodeProject | None:
    """The Node project in ``folder`` (None without a readable package.json)."""
    package = read_json(folder / "package.json")
    if package is None:
        return None
    runner, reason = _runner(folder, package)
    lockfile, manager, command = _lockfile(folder)
    declared = str(package.get("packageManager", "")).split("@", 1)[0]
    if declared in ("npm", "yarn", "pnpm", "bun") and declared != manager:
        manager, command = declared, f"{declared} install"
    workspaces = "workspaces" in package or (folder / "pnpm-workspace.yaml").is_file()
    return NodeProject(folder, package, runner, reason, manager, lockfile, command, workspaces)


def node_env() -> dict[str, str]:
    """The environment for JS test runners: the user's own, caches kept out of node_modules
    where tools allow it, and no variables of a test run agent-lsp itself may be part of.
    Colour and CI variables are left as they are: tests of a project may depend on them, and
    the runners' flags (``--ci``, ``--run``) already make the run non-interactive."""
    env = dict(os.environ)
    env.setdefault("CACHE_DIR", str(Path(tempfile.gettempdir()) / "agent-lsp-node-cache"))
    for key in ("NODE_OPTIONS", "JEST_WORKER_ID", "VITEST", "VITEST_MODE"):
        env.pop(key, None)
    return env


def split_targets(targets: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``file``/``file::test name`` targets into file filters and test names."""
    files: list[str] = []
    names: list[str] = []
    for target in targets:
        path, _, name = target.partition("::")
        if path and path not in files:
            files.append(path)
        if name and name not in names:
            names.append(name)
    return files, names


def js_regex_escape(text: str) -> str:
    return re.sub(r"[.*+?^${}()|[\]\\/]", lambda m: "\\" + m.group(0), text)


def name_pattern(names: Sequence[str]) -> str | None:
    """A regex matching exactly the given full test names (``describe`` titles + title)."""
    if not names:
        return None
    return "^(?:" + "|".join(js_regex_escape(name) for name in names) + ")$"
