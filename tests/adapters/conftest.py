"""Fixture projects for the adapter tests: copies of tests/fixtures/*, with node_modules
installed once per session into tests/fixtures/.node-cache/ (git-ignored) and linked in."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import which_or_skip

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NODE_CACHE = FIXTURES / ".node-cache"
_INSTALL_TIMEOUT = 600

ProjectFactory = Callable[..., Path]


def copy_fixture(name: str, dest: Path, *variants: str) -> Path:
    """Copy fixture ``name`` to ``dest``, then overlay each variant's files (``*.txt``)."""
    source = FIXTURES / name
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("variants", "node_modules"))
    for variant in variants:
        folder = source / "variants" / variant
        assert folder.is_dir(), f"no variant {variant} in {name}"
        for path in folder.rglob("*.txt"):
            target = dest / path.relative_to(folder).with_suffix("")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return dest


def _fail_or_skip(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _install(fixture: str) -> Path:
    """node_modules for the fixture's package.json, installed once (keyed by its hash)."""
    which_or_skip("node")
    npm = which_or_skip("npm")
    package = (FIXTURES / fixture / "package.json").read_bytes()
    key = hashlib.sha256(package).hexdigest()[:12]
    folder = NODE_CACHE / f"{fixture}-{key}"
    done = folder / ".installed"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel sessions install once
        if not done.exists():
            (folder / "package.json").write_bytes(package)
            proc = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=_INSTALL_TIMEOUT,
                check=False,
            )
            if proc.returncode != 0:
                _fail_or_skip(f"npm install for {fixture} failed: {proc.stderr[-2000:]}")
            done.write_text("ok\n")
    return folder / "node_modules"


@pytest.fixture(scope="session")
def node_modules() -> Callable[[str], Path]:
    """``node_modules(fixture)`` -> the installed node_modules folder for that fixture."""
    installed: dict[str, Path] = {}

    def get(fixture: str) -> Path:
        if fixture not in installed:
            installed[fixture] = _install(fixture)
        return installed[fixture]

    return get


def link_node_modules(cache: Path, project: Path) -> None:
    """A real node_modules folder whose entries link to the cached packages (like a user's
    folder: the shadow workspace shares each entry)."""
    target = project / "node_modules"
    target.mkdir()
    for entry in cache.iterdir():
        (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


@pytest.fixture
def js_project(tmp_path: Path, node_modules: Callable[[str], Path]) -> ProjectFactory:
    """``js_project("js-jest", "hang")``: a copy of the fixture with node_modules linked."""

    def make(fixture: str, *variants: str, dest: Path | None = None) -> Path:
        project = copy_fixture(fixture, dest or tmp_path / fixture, *variants)
        link_node_modules(node_modules(fixture), project)
        return project

    return make


@pytest.fixture(scope="session")
def go_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private GOCACHE/GOPATH for the session (no network: the adapter sets GOPROXY=off)."""
    which_or_skip("go")
    base = tmp_path_factory.mktemp("go")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GOCACHE", str(base / "cache"))
        patch.setenv("GOPATH", str(base / "path"))
        patch.setenv("GOFLAGS", "-mod=mod")  # must be dropped by the adapter
        patch.delenv("GOPROXY", raising=False)
        yield base


@pytest.fixture
def go_project(tmp_path: Path, go_cache: Path) -> ProjectFactory:
    """``go_project("hang")``: a copy of tests/fixtures/go-mod with the given variants."""
    del go_cache

    def make(*variants: str) -> Path:
        return copy_fixture("go-mod", tmp_path / "go-mod", *variants)

    return make
