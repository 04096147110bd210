"""Incremental work of the symbol index: a warm start unpacks a file's definitions only when
they are read (and they equal the ones a parse builds); a known change re-reads that file and
nothing else; the walk reuses the listings of directories that did not change, and still sees
every change."""

from __future__ import annotations

import os
from pathlib import Path

from agent_lsp.symbols import SymbolIndex
from agent_lsp.symbols import cache as persisted
from agent_lsp.symbols.packed import Definitions
from tests.test_symbols_cache import FILES, Counting, make_project, settle, snapshot

HOUR_NS = 3600 * 1_000_000_000
NAMES = ("Stack", "push", "pop", "helper", "main", "Stack.push", "nothing")


def age_folders(root: Path) -> None:
    """Date every folder an hour back (a folder written just now is listed on every walk)."""
    for folder, names, _ in os.walk(root):
        for name in [*names, ""]:
            path = Path(folder, name)
            info = path.stat()
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - HOUR_NS))


def answers(index: SymbolIndex) -> dict[str, object]:
    return {
        name: (
            [(h.path, h.definition) for h in index.definitions(name)],
            index.occurrences(name),
            index.names_like(name),
        )
        for name in NAMES
    }


def _read(definitions: object) -> bool:
    return isinstance(definitions, Definitions) and definitions.packed is None


def warm_index(project: Path, extractor: Counting | None = None) -> SymbolIndex:
    index = SymbolIndex(project, cache=persisted.cache_path(project), extractor=extractor)
    index.refresh()
    return index


def test_a_warm_start_unpacks_definitions_when_read_and_they_equal_the_parsed_ones(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    cold = warm_index(project)
    expected = answers(cold)
    warm = warm_index(project)
    assert (warm.parsed, warm.reused) == (0, len(FILES))
    stored = [f.symbols.definitions for f in warm.files()]
    assert all(isinstance(d, Definitions) and d.packed is not None for d in stored)
    assert [(h.path, h.definition.line) for h in warm.definitions("helper")] == [
        ("shapes/util.py", 1)
    ]
    files = warm.files()
    unpacked = [f.path for f, d in zip(files, stored, strict=True) if _read(d)]
    assert unpacked == ["shapes/util.py"]  # only the file defining the name asked for
    assert answers(warm) == expected
    assert snapshot(warm) == snapshot(cold)
    for entry, built in zip(warm.files(), cold.files(), strict=True):
        assert tuple(entry.symbols.definitions) == built.symbols.definitions
        assert dict(entry.symbols.identifiers) == dict(built.symbols.identifiers)


def test_a_warm_start_with_files_changed_meanwhile_answers_as_a_fresh_build(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    warm_index(project).close()
    (project / "shapes/util.py").write_text("def helper2(x):\n    return x\n")
    (project / "shapes/stack.py").unlink()
    (project / "new.py").write_text("class Stack:\n    pass\n")
    buffered = SymbolIndex(project, cache=persisted.cache_path(project))
    buffered.update_file("app.py", "def main():\n    pass\n\n\ndef helper():\n    pass\n")
    buffered.refresh()
    fresh = SymbolIndex(project)
    fresh.update_file("app.py", "def main():\n    pass\n\n\ndef helper():\n    pass\n")
    fresh.refresh()
    assert answers(buffered) == answers(fresh)
    assert [h.path for h in buffered.definitions("helper")] == ["app.py"]
    buffered.close()  # saved without the buffer: the next start sees the disk's app.py
    again = warm_index(project)
    assert (again.parsed, again.reused) == (1, 3)  # app.py was not saved while a buffer
    assert [h.path for h in again.definitions("main")] == ["app.py"]
    assert again.definitions("helper") == []


def test_a_known_change_re_reads_that_file_and_nothing_else(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    counting = Counting()
    index = warm_index(project, counting)
    assert counting.calls == len(FILES)
    (project / "shapes/util.py").write_text("def renamed(x):\n    return x\n")
    (project / "app.py").write_text("def unnoticed():\n    pass\n")
    (project / "web/client.js").unlink()
    (project / "node_modules").mkdir()
    (project / "node_modules/dep.py").write_text("def vendored():\n    pass\n")
    told = ["shapes/util.py", project / "web/client.js", project / "node_modules/dep.py"]
    assert index.refresh_paths(told) == 2
    assert counting.calls == len(FILES) + 1  # util.py parsed; nothing else read
    assert [h.path for h in index.definitions("renamed")] == ["shapes/util.py"]
    assert index.definitions("helper") == []
    assert [h.path for h in index.definitions("Stack")] == ["shapes/stack.py"]
    assert index.definitions("vendored") == []
    assert index.definitions("unnoticed") == []  # not told: left to the next walk
    assert index.refresh_paths(["shapes/util.py"]) == 0  # current: not read again
    assert counting.calls == len(FILES) + 1
    assert index.refresh() == 1  # the walk finds app.py, and only it
    assert counting.calls == len(FILES) + 2
    assert [h.path for h in index.definitions("unnoticed")] == ["app.py"]


def test_a_known_change_leaves_an_editor_buffer_alone_and_waits_for_the_first_build(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    counting = Counting()
    index = SymbolIndex(project, extractor=counting)
    assert index.refresh_paths(["app.py"]) == 0  # not built: the first refresh reads it all
    assert counting.calls == 0
    index.refresh()
    index.update_file("shapes/util.py", "def typed():\n    pass\n")
    (project / "shapes/util.py").write_text("def saved():\n    pass\n")
    assert index.refresh_paths(["shapes/util.py"]) == 0
    assert [h.path for h in index.definitions("typed")] == ["shapes/util.py"]
    index.close_file("shapes/util.py")
    assert [h.path for h in index.definitions("saved")] == ["shapes/util.py"]


def test_the_walk_reuses_unchanged_folders_and_still_sees_every_change(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    age_folders(project)
    counting = Counting()
    index = SymbolIndex(project, extractor=counting)
    index.refresh()
    walker = index._walker  # pyright: ignore[reportPrivateUsage]
    assert walker is not None
    listed = walker.listed
    assert index.refresh() == 0
    assert walker.listed == listed  # no folder listed again
    (project / "shapes/util.py").write_text("def edited():\n    pass\n")  # in place
    settle(project / "shapes/util.py")
    (project / "shapes/extra.py").write_text("def added():\n    pass\n")
    (project / "web/client.js").rename(project / "web/moved.js")
    (project / "venv2").mkdir()
    (project / "venv2/pyvenv.cfg").write_text("home = /usr\n")
    (project / "venv2/lib.py").write_text("def hidden():\n    pass\n")
    assert index.refresh() == 4  # util.py changed, extra.py new, client.js gone, moved.js new
    assert walker.listed == listed + 4  # the root (venv2/ added), shapes/, web/, venv2/
    found = {name: [h.path for h in index.definitions(name)] for name in ("edited", "added")}
    assert found == {"edited": ["shapes/util.py"], "added": ["shapes/extra.py"]}
    assert [h.path for h in index.definitions("Stack")] == ["shapes/stack.py", "web/moved.js"]
    assert index.definitions("hidden") == []
    fresh = SymbolIndex(project)
    fresh.refresh()
    assert snapshot(index) == snapshot(fresh)
