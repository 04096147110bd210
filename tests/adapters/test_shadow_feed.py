"""The shadow refreshed from its change feed (inotify) is never stale: in-place rewrites that
keep size and mtime, files and folders created, deleted and renamed in nested folders, folders
made after the watch started, an overflowed event queue and the watch limit (real files in
temp folders; without inotify the same steps give the same trees)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters import ShadowWorkspace

needs_inotify = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and ".git" not in p.parts
    }


def _project(root: Path) -> Path:
    for rel, text in {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "pkg/core/deep/util.py": "X = 1\n",
        "pkg/core/deep/data.txt": "original\n",
        "pkg/other/mod.py": "Y = 2\n",
        ".git/HEAD": "ref: refs/heads/main\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _rewrite_keeping_size_and_mtime(path: Path, text: str) -> None:
    """An in-place rewrite that a size-and-mtime comparison cannot see."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    with path.open("r+b") as handle:
        handle.write(text.encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@needs_inotify
def test_an_in_place_rewrite_with_the_same_size_and_mtime_is_copied(tmp_path: Path) -> None:
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow")
    dest = shadow.sync({})
    assert shadow.feed.watching
    _rewrite_keeping_size_and_mtime(source / "pkg/core/deep/data.txt", "CHANGED!\n")
    assert shadow.last_checked == 5  # the walk: "", pkg, pkg/core, pkg/core/deep, pkg/other
    shadow.sync({})
    assert shadow.last_checked == 1  # only the folder the feed reported
    assert (dest / "pkg/core/deep/data.txt").read_text() == "CHANGED!\n"
    assert _files(dest) == _files(source)


@needs_inotify
def test_a_folder_made_after_the_watch_started_is_watched_too(tmp_path: Path) -> None:
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow")
    dest = shadow.sync({})
    (source / "pkg/core/deep/new/nested").mkdir(parents=True)
    (source / "pkg/core/deep/new/nested/a.py").write_text("A = 1\n")
    (source / "pkg/core/deep/new/b.py").write_text("B = 1\n")
    shadow.sync({})
    assert _files(dest) == _files(source)
    _rewrite_keeping_size_and_mtime(source / "pkg/core/deep/new/nested/a.py", "A = 9\n")
    shadow.sync({})
    assert (dest / "pkg/core/deep/new/nested/a.py").read_text() == "A = 9\n"


def _created_deleted_renamed(source: Path, dest: Path) -> None:
    (source / "pkg/core/deep/util.py").unlink()
    (source / "pkg/core/deep/added.py").write_text("Z = 3\n")
    (source / "pkg/other/mod.py").rename(source / "pkg/core/moved.py")
    (source / "pkg/core/deep").rename(source / "pkg/deeper")  # a watched folder, renamed
    shutil.rmtree(source / "pkg/other")
    (dest / "pkg/stray.tmp").write_text("written by a test run")
    (dest / "calc.py").write_text("def add(a, b):\n    return 0\n")


def _edited_in_the_renamed_folder(source: Path, dest: Path) -> None:
    (source / "pkg/deeper/added.py").write_text("Z = 4444\n")
    (source / "pkg/deeper/sub").mkdir()
    (source / "pkg/deeper/sub/s.py").write_text("S = 1\n")
    shutil.rmtree(dest / "pkg/deeper")  # a test deleting a folder of the shadow


@pytest.mark.parametrize("watch", [True, False], ids=["inotify", "walk"])
def test_created_deleted_and_renamed_in_nested_folders(tmp_path: Path, watch: bool) -> None:
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow", watch=watch)
    dest = shadow.sync({})
    assert shadow.feed.watching is (watch and sys.platform.startswith("linux"))
    steps: list[Callable[[Path, Path], None]] = [
        _created_deleted_renamed,
        _edited_in_the_renamed_folder,
    ]
    for step in steps:
        step(source, dest)
        shadow.sync({})
        assert _files(dest) == _files(source), step.__name__
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "calc.py",
        "pkg",
        "pkg/core",
        "pkg/core/moved.py",
        "pkg/deeper",
        "pkg/deeper/added.py",
        "pkg/deeper/data.txt",
        "pkg/deeper/sub",
        "pkg/deeper/sub/s.py",
    ]


@pytest.mark.parametrize("watch", [True, False], ids=["inotify", "walk"])
def test_a_closed_buffer_and_a_reported_save_come_back_from_the_disk(
    tmp_path: Path, watch: bool
) -> None:
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow", watch=watch)
    dest = shadow.sync({"pkg/other/mod.py": "Y = 3\n", "pkg/new/buf.py": "N = 1\n"})
    assert (dest / "pkg/other/mod.py").read_text() == "Y = 3\n"
    mtime = (source / "pkg/other/mod.py").stat().st_mtime_ns
    os.utime(dest / "pkg/other/mod.py", ns=(mtime, mtime))
    # the editor saw this one saved (didSave / didChangeWatchedFiles): copied again, even
    # without inotify, though its size and mtime are the same
    _rewrite_keeping_size_and_mtime(source / "calc.py", "def add(a, b):\n    return a * b\n")
    shadow.note_changed(["calc.py", "../outside.py"])
    shadow.sync({})  # the buffers closed
    assert _files(dest) == _files(source)
    assert not (dest / "pkg/new").exists()


@needs_inotify
def test_an_overflowed_event_queue_falls_back_to_a_full_walk(tmp_path: Path) -> None:
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except (OSError, ValueError):
        pytest.skip("no inotify queue limit to read")
    if limit > 100_000:
        pytest.skip(f"max_queued_events {limit}: too many events to make in a test")
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow")
    dest = shadow.sync({})
    first, second = source / "pkg/other/mod.py", source / "calc.py"
    for n in range(limit // 2 + 8):  # alternating, so the kernel cannot merge them
        os.utime(first, ns=(n, n))
        os.utime(second, ns=(n, n))
    (source / "pkg/core/deep/after.py").write_text("lost event\n")  # its event is dropped
    shadow.sync({})
    assert (dest / "pkg/core/deep/after.py").read_text() == "lost event\n"
    assert _files(dest) == _files(source)
    assert shadow.feed.watching  # watching goes on after the walk


@needs_inotify
def test_past_the_watch_budget_every_sync_walks_the_tree(tmp_path: Path) -> None:
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow", max_watches=3)
    dest = shadow.sync({})
    assert not shadow.feed.watching
    (source / "pkg/core/deep/util.py").write_text("X = 22\n")
    (source / "pkg/other/new.py").write_text("N = 1\n")
    shadow.sync({})
    assert _files(dest) == _files(source)
