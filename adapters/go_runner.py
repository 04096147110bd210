"""Run ``go test -json`` on a module (offline; ``-race`` only when the project's Makefile or CI
runs its tests with it, and cgo works) and report."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from adapters import gojson_tee
from adapters.go_parse import build_go_report
from adapters.results import TestReport, environment_report
from adapters.shell import Shell, scratch_dir

__all__ = ["GoTestRunner", "go_env", "go_targets", "module_path", "race_requested"]

_RACE_PLATFORMS = frozenset(
    {"linux/amd64", "linux/arm64", "linux/ppc64le", "linux/s390x", "darwin/amd64"}
    | {"darwin/arm64", "freebsd/amd64", "netbsd/amd64", "windows/amd64"}
)
_race_cache: dict[str, bool] = {}
# `go test -race`, `$(GO) test -v -race`, `TESTFLAGS := -race`, `GOFLAGS=-race` ...
_RACE_FLAG = re.compile(r"^(?=.*(?:\btest\b|GOFLAGS|TESTFLAGS)).*?(?:\s|=|[\"'])-race\b", re.M)
_BUILD_FILES = ("Makefile", "GNUmakefile", "makefile", "Taskfile.yml", "Taskfile.yaml", "justfile")
_CI_GLOBS = (".github/workflows/*.yml", ".github/workflows/*.yaml", "*.mk", "scripts/*.sh")
_CI_FILES = (".gitlab-ci.yml", ".circleci/config.yml", ".travis.yml", "magefile.go")


def race_requested(root: Path) -> str | None:
    """The file (Makefile, CI workflow, ...) that runs ``go test -race``, or None: ``-race``
    builds a race runtime and instruments every package (a first run takes several times
    as long), so it is used only when the project asks for it."""
    files = [root / name for name in (*_BUILD_FILES, *_CI_FILES)]
    for pattern in _CI_GLOBS:
        files += sorted(root.glob(pattern))
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")[:200_000]
        except OSError:
            continue
        if _RACE_FLAG.search(text):
            return path.relative_to(root).as_posix()
    return None


def module_path(root: Path) -> str | None:
    """The ``module`` line of ``root/go.mod``."""
    try:
        text = (root / "go.mod").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    match = re.search(r"^module\s+\"?([^\s\"]+)", text, re.MULTILINE)
    return match.group(1) if match else None


def go_env() -> dict[str, str]:
    """The environment for ``go``: no GOFLAGS from the environment (``-mod=mod`` would rewrite
    go.mod); module downloads off (and no toolchain switch) unless GOPROXY is set."""
    env = dict(os.environ)
    env.pop("GOFLAGS", None)
    if "GOPROXY" not in env:
        env["GOPROXY"] = "off"
        env.setdefault("GOTOOLCHAIN", "local")
    return env


def go_targets(targets: Sequence[str]) -> tuple[list[str], str | None]:
    """Package patterns and the ``-run`` regex for ``dir``/``file.go``/``dir::TestName``."""
    packages: list[str] = []
    names: list[str] = []
    for target in targets:
        path, _, name = target.partition("::")
        path = path.strip().removeprefix("./")
        if path.endswith(".go"):
            path = path.rpartition("/")[0]
        pattern = "./" + path if path and path != "." else "."
        if path.endswith("..."):
            pattern = "./" + path
        if pattern not in packages:
            packages.append(pattern)
        if name and name not in names:
            names.append(name)
    if not names:
        return packages or ["./..."], None
    if len(names) == 1 and "/" in names[0]:
        run = "/".join(f"^{re.escape(part)}$" for part in names[0].split("/"))
        return packages, run
    tops = dict.fromkeys(name.split("/", 1)[0] for name in names)
    return packages, "^(?:" + "|".join(re.escape(top) for top in tops) + ")$"


class GoTestRunner:
    """Toolchain adapter for Go modules (``go test -json``)."""

    name: str = "go test"
    extra_args: tuple[str, ...] = ()  # the user's `tests.args`

    def __init__(self, race: bool | None = None) -> None:
        # None: -race when the project's Makefile/CI asks for it and `go env` says it works
        self._race = race

    def detect(self, root: Path) -> bool:
        return (root / "go.mod").is_file()

    async def race_supported(self, shell: Shell, cwd: Path, env: Mapping[str, str]) -> bool:
        """Whether ``-race`` works here: cgo enabled, a C compiler found, a race platform."""
        if self._race is not None:
            return self._race
        key = f"{env.get('PATH', '')}|{env.get('CGO_ENABLED', '')}|{env.get('CC', '')}"
        if key not in _race_cache:
            result = await shell.run(
                ("go", "env", "CGO_ENABLED", "CC", "GOOS", "GOARCH"), cwd=cwd, timeout=30, env=env
            )
            values = result.output.split()
            supported = False
            if result.exit_code == 0 and len(values) == 4:
                cgo, cc, goos, goarch = values
                has_cc = shutil.which(cc, path=env.get("PATH")) is not None
                supported = cgo == "1" and has_cc and f"{goos}/{goarch}" in _RACE_PLATFORMS
            _race_cache[key] = supported
        return _race_cache[key]

    async def run(
        self,
        project_root: Path,
        run_root: Path,
        targets: Sequence[str],
        *,
        shell: Shell,
        timeout: float,  # noqa: ASYNC109
    ) -> TestReport:
        """``go test -json`` in ``run_root``; targets are ``dir``, ``file.go``, ``dir::Test``."""
        env = go_env()
        if shutil.which("go", path=env.get("PATH")) is None:
            hint = "go is not on PATH: install Go (e.g. `apt-get install golang-go`) or add it"
            return environment_report(self.name, hint)
        packages, run = go_targets(targets)
        flags = ["-json"]
        wanted = self._race if self._race is not None else race_requested(project_root)
        if wanted and await self.race_supported(shell, run_root, env):
            flags.append("-race")
        if timeout > 5:
            # go's own timeout fires first, so the report names the test that hung
            flags.append(f"-timeout={max(1.0, timeout * 0.9 - 2):.1f}s")
        if run is not None:
            flags += ["-run", run]
        tmpdir = scratch_dir(shell, "agent-lsp-go-")
        events = tmpdir / "events.jsonl"
        flags += self.extra_args
        argv = (sys.executable, gojson_tee.__file__, str(events), "go", "test", *flags, *packages)
        try:
            result = await shell.run(argv, cwd=run_root, timeout=timeout, env=env)
            module = module_path(run_root) or module_path(project_root)
            report = await asyncio.to_thread(
                build_go_report, result, events, run_root, module, timeout
            )
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        if report.ok:
            return report
        hint = go_hint(report.output, project_root)
        return report if hint is None else dataclasses.replace(report, hint=hint)


def go_hint(output: str, project_root: Path) -> str | None:
    """A next step for environment failures seen in go's output."""
    needs = re.search(r"requires go >= (\S+)|note: module requires Go (\S+)", output)
    if needs:
        version = needs.group(1) or needs.group(2)
        return f"go.mod asks for Go {version}: install that Go version (see `go version`)"
    missing = re.search(
        r"no required module provides package (\S+?);|module lookup disabled", output
    )
    if missing or "GOPROXY=off" in output or "missing go.sum entry" in output:
        return (
            "a dependency is not in the module cache and downloads are off (GOPROXY=off): run "
            f"`go mod download` in {project_root} with network access"
        )
    return None
