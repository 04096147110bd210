"""ShadowWorkspace: copying, overlays, incremental updates, skip dirs, symlinks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from adapters import PosixShell, ShadowWorkspace, VitestRunner
from tests.adapters.conftest import ProjectFactory


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    files = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "pkg/__init__.py": "",
        "pkg/util.py": "X = 1\n",
        "tests/test_calc.py": "from calc import add\n",
        ".git/HEAD": "ref: refs/heads/main\n",
        ".venv/bin/python": "",
        "pkg/__pycache__/util.cpython-311.pyc": "junk",
        "web/node_modules/lib/index.js": "",
    }
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return src


def _bump(path: Path, text: str) -> None:
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_initial_copy_skips_dirs_and_preserves_mtimes(project: Path, tmp_path: Path) -> None:
    dest = tmp_path / "shadow" / "nested"
    assert ShadowWorkspace(project, dest).sync({}) == dest.absolute()
    assert set(_tree(dest)) == {"calc.py", "pkg/__init__.py", "pkg/util.py", "tests/test_calc.py"}
    assert not (dest / ".git").exists()
    # Dependencies are shared, not copied: node_modules is a folder of links, a venv a link.
    assert (dest / "web/node_modules").is_dir()
    assert not (dest / "web/node_modules").is_symlink()
    assert (dest / "web/node_modules/lib").resolve() == (project / "web/node_modules/lib")
    assert (dest / ".venv").is_symlink()
    src_calc, dst_calc = (project / "calc.py").stat(), (dest / "calc.py").stat()
    assert src_calc.st_mtime_ns == dst_calc.st_mtime_ns
    assert src_calc.st_ino != dst_calc.st_ino  # a real copy, never a hard link
    assert dst_calc.st_nlink == 1


def test_overlay_is_visible_and_source_untouched(project: Path, tmp_path: Path) -> None:
    before = _snapshot(project)
    shadow = ShadowWorkspace(project, tmp_path / "shadow")
    dest = shadow.sync({"calc.py": "def add(a, b):\r\n    return a - b\r\n", "new/mod.py": "Y=2"})
    assert (dest / "calc.py").read_bytes() == b"def add(a, b):\r\n    return a - b\r\n"
    assert (dest / "new/mod.py").read_text() == "Y=2"
    assert _snapshot(project) == before
    assert not (project / "new").exists()
    # Overlay dropped: restored from the source; the overlay-only file disappears.
    shadow.sync({})
    assert (dest / "calc.py").read_bytes() == (project / "calc.py").read_bytes()
    assert not (dest / "new").exists()
    assert _snapshot(project) == before


def test_incremental_updates(project: Path, tmp_path: Path) -> None:
    shadow = ShadowWorkspace(project, tmp_path / "shadow")
    dest = shadow.sync({})
    untouched_ino = (dest / "pkg/__init__.py").stat().st_ino
    _bump(project / "pkg/util.py", "X = 2\n")
    (project / "calc.py").unlink()
    (project / "tests/test_calc.py").unlink()
    (project / "tests").rmdir()
    (project / "docs").mkdir()
    (project / "docs/notes.md").write_text("hi\n")
    shadow.sync({})
    assert set(_tree(dest)) == {"pkg/__init__.py", "pkg/util.py", "docs/notes.md"}
    assert (dest / "pkg/util.py").read_text() == "X = 2\n"
    assert not (dest / "calc.py").exists()
    assert not (dest / "tests").exists()
    assert (dest / "docs/notes.md").read_text() == "hi\n"
    assert (dest / "pkg/__init__.py").stat().st_ino == untouched_ino  # not recopied


def test_symlinks_are_recreated(project: Path, tmp_path: Path) -> None:
    (project / "link.py").symlink_to("calc.py")
    (project / "pkg_alias").symlink_to("pkg", target_is_directory=True)
    (project / "abs_link.py").symlink_to(project / "calc.py")
    dest = ShadowWorkspace(project, tmp_path / "shadow").sync({})
    assert (dest / "link.py").is_symlink()
    assert (dest / "link.py").readlink() == Path("calc.py")
    assert (dest / "pkg_alias").is_symlink()
    assert (dest / "pkg_alias/util.py").read_text() == "X = 1\n"
    assert (dest / "abs_link.py").resolve() == (dest / "calc.py").resolve()


def test_overlay_never_writes_through_symlinks(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "data").symlink_to(outside, target_is_directory=True)
    (project / "alias.py").symlink_to("calc.py")
    shadow = ShadowWorkspace(project, tmp_path / "shadow")
    dest = shadow.sync({"data/sub/x.py": "x", "alias.py": "changed"})
    assert list(outside.iterdir()) == []
    assert not (dest / "alias.py").is_symlink()
    assert (dest / "alias.py").read_text() == "changed"
    assert (project / "calc.py").read_text().startswith("def add")
    shadow.sync({})
    assert (dest / "alias.py").is_symlink()


def test_to_source(project: Path, tmp_path: Path) -> None:
    shadow = ShadowWorkspace(project, tmp_path / "shadow")
    dest = shadow.sync({})
    assert shadow.to_source(dest / "pkg/util.py") == project / "pkg/util.py"
    assert shadow.to_source("pkg/util.py") == project / "pkg/util.py"
    assert shadow.to_source(str(dest / "calc.py")) == project / "calc.py"
    assert shadow.to_source(Path("/usr/lib/python3/x.py")) == Path("/usr/lib/python3/x.py")


def test_rejects_bad_overlays_and_layouts(project: Path, tmp_path: Path) -> None:
    shadow = ShadowWorkspace(project, tmp_path / "shadow")
    with pytest.raises(ValueError):
        shadow.sync({"../escape.py": "x"})
    with pytest.raises(ValueError):
        shadow.sync({str(project / "calc.py"): "x"})
    with pytest.raises(ValueError):
        ShadowWorkspace(project, project)


def test_dest_inside_source_is_not_copied_into_itself(project: Path) -> None:
    dest = project / "build" / "shadow"
    ShadowWorkspace(project, dest).sync({})
    assert (dest / "calc.py").exists()
    assert not (dest / "build" / "shadow").exists()
    assert ShadowWorkspace(project, dest).sync({"calc.py": "x"}) == dest


def test_node_modules_entries_are_shared_and_caches_stay_local(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for rel in (
        "package.json",
        "node_modules/jest/index.js",
        "node_modules/.bin/jest",
        "node_modules/@scope/pkg/index.js",
        "node_modules/.cache/babel/x",
        "node_modules/.vite/deps.json",
        "web/node_modules/vite/index.js",
    ):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x")
    shadow = ShadowWorkspace(src, tmp_path / "shadow")
    dest = shadow.sync({})
    modules = dest / "node_modules"
    assert modules.is_dir() and not modules.is_symlink()
    assert sorted(p.name for p in modules.iterdir()) == [".bin", "@scope", "jest"]
    assert all((modules / name).is_symlink() for name in (".bin", "@scope", "jest"))
    assert (modules / "@scope/pkg/index.js").read_text() == "x"
    assert (dest / "web/node_modules/vite").is_symlink()
    # A tool writing its cache into the shadow's node_modules writes into the shadow.
    (modules / ".vite").mkdir()
    (modules / ".vite/results.json").write_text("{}")
    assert (src / "node_modules/.vite/deps.json").read_text() == "x"
    assert not (src / "node_modules/.vite/results.json").exists()
    # Packages added or removed in the project follow on the next sync.
    (src / "node_modules/lodash").mkdir()
    shutil.rmtree(src / "node_modules/jest")
    shadow.sync({})
    assert (modules / "lodash").is_symlink()
    assert not (modules / "jest").exists()
    assert (src / "node_modules/@scope/pkg/index.js").exists()  # never deleted through a link
    # Overlays never write through the shared links.
    shadow.sync({"node_modules/lodash/patch.js": "x"})
    assert not (src / "node_modules/lodash/patch.js").exists()


def test_virtualenvs_are_linked_whole(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "env3/lib").mkdir(parents=True)
    (src / "env3/pyvenv.cfg").write_text("home = /usr/bin\n")
    (src / "venv/bin").mkdir(parents=True)
    (src / "app.py").write_text("")
    dest = ShadowWorkspace(src, tmp_path / "shadow").sync({})
    assert (dest / "env3").is_symlink()
    assert (dest / "env3").resolve() == (src / "env3").resolve()
    assert (dest / "venv").is_symlink()
    assert (dest / "app.py").is_file() and not (dest / "app.py").is_symlink()


async def test_shadow_of_a_node_project_runs_its_tests(
    js_project: ProjectFactory, tmp_path: Path
) -> None:
    project = js_project("js-vitest")
    shadow = ShadowWorkspace(project, tmp_path / "shadow")
    failing = (
        'import { expect, test } from "vitest";\n\ntest("new", () => {\n  expect(1).toBe(2);\n});\n'
    )
    run_root = shadow.sync({"src/more.test.js": failing})
    report = await VitestRunner().run(
        project, run_root, ["src/more.test.js"], shell=PosixShell(), timeout=60
    )
    assert (report.passed, report.failed) == (0, 1), report.output
    assert report.failures[0].file == "src/more.test.js"
    assert not (project / "node_modules/.vite").exists()  # vitest's cache stayed in the shadow
    assert "expect(add(10, 5))" in (project / "src/more.test.js").read_text()


def test_many_files_are_copied_in_parallel(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for i in range(300):
        path = src / f"d{i % 7}" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(i))
    dest = ShadowWorkspace(src, tmp_path / "shadow").sync({"d0/f0.txt": "overlay"})
    copied = _snapshot(dest)
    assert len(copied) == 300
    assert copied["d1/f1.txt"] == (b"1", (src / "d1/f1.txt").stat().st_mtime_ns)
    assert copied["d0/f0.txt"][0] == b"overlay"


def test_a_folder_the_tests_swapped_for_a_link_is_never_written_through(
    project: Path, tmp_path: Path
) -> None:
    """A test (running in the shadow) replaces `pkg/` with a link to a folder of the user's;
    the next sync — outside any sandbox — must neither write nor delete through it."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("user file\n")
    shadow = ShadowWorkspace(project, tmp_path / "shadow")
    dest = shadow.sync({})
    shutil.rmtree(dest / "pkg")
    (dest / "pkg").symlink_to(victim, target_is_directory=True)
    (project / "pkg" / "keep.txt").write_text("from the project\n")
    (project / "pkg" / "util.py").write_text("X = 2\n")
    shadow.sync({})
    assert [p.name for p in victim.iterdir()] == ["keep.txt"]
    assert (victim / "keep.txt").read_text() == "user file\n"
    assert not (dest / "pkg").is_symlink()
    assert (dest / "pkg" / "util.py").read_text() == "X = 2\n"
    (project / "pkg" / "keep.txt").unlink()
    shutil.rmtree(dest / "pkg")
    (dest / "pkg").symlink_to(victim, target_is_directory=True)
    shadow.sync({})
    assert (victim / "keep.txt").read_text() == "user file\n"


def test_skipped_files_never_reach_the_shadow(project: Path, tmp_path: Path) -> None:
    (project / ".env").write_text("TOKEN=x\n")
    (project / "pkg" / "prod.env").write_text("TOKEN=y\n")
    shadow = ShadowWorkspace(project, tmp_path / "shadow", skip=lambda rel: "env" in rel)
    dest = shadow.sync({})
    assert not (dest / ".env").exists() and not (dest / "pkg" / "prod.env").exists()
    assert (dest / "pkg" / "util.py").read_text() == "X = 1\n"
