"""ShadowWorkspace: copying, overlays, incremental updates, skip dirs, symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters import ShadowWorkspace


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
    assert not (dest / "web/node_modules").exists()
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
