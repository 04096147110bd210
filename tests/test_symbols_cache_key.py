"""The persisted symbol index is authenticated by a per-user key kept outside the project: a
cache shipped in a repository (written under another key, with wrong symbol lines) is ignored
and rebuilt; the key is made once, private, and a key that is not private is not used."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest

from agent_lsp.symbols import FileSymbols, SymbolIndex
from agent_lsp.symbols import cache as persisted

HOUR_NS = 3600 * 1_000_000_000
FILES = {
    "shapes/stack.py": (
        "class Stack:\n    def push(self, item):\n        self.items.append(item)\n\n"
        "    def pop(self):\n        return self.items.pop()\n"
    ),
    "shapes/util.py": "\n\n\ndef helper(x):\n    return x\n",
    "web/client.js": "export class Stack {}\nfunction push(s) {\n  s.push(2);\n}\n",
}


def make_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        info = path.stat()  # checked out an hour ago: the cache keeps its stamp
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - HOUR_NS))
    return root


def lines(index: SymbolIndex) -> dict[str, list[tuple[str, int]]]:
    return {
        name: [(h.path, h.definition.line) for h in index.definitions(name)]
        for name in ("Stack", "push", "helper")
    }


TRUE_LINES = {
    "Stack": [("shapes/stack.py", 1), ("web/client.js", 1)],
    "push": [("shapes/stack.py", 2), ("web/client.js", 2)],
    "helper": [("shapes/util.py", 4)],
}


def shifted(symbols: FileSymbols) -> FileSymbols:
    moved = tuple(
        dataclasses.replace(d, line=d.line + 40, end_line=d.end_line + 40)
        for d in symbols.definitions
    )
    return dataclasses.replace(symbols, definitions=moved)


def test_a_cache_shipped_by_the_repository_is_ignored_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path / "repo")
    path = persisted.cache_path(project)
    # Elsewhere (the attacker's machine: another user's cache folder, so another key), the
    # module's own writer builds the index, then writes it again with every line moved.
    with monkeypatch.context() as elsewhere:
        elsewhere.setenv("XDG_CACHE_HOME", str(tmp_path / "attacker-cache"))
        SymbolIndex(project, cache=path).refresh()
        entries = persisted.load(path, "auto")
        assert entries.keys() == set(FILES)
        crafted = {key: (stamp, found, shifted(s)) for key, (stamp, found, s) in entries.items()}
        assert persisted.save(path, project, crafted, "auto")
        trap = SymbolIndex(project, cache=path)
        trap.refresh()
        assert (trap.parsed, trap.reused) == (0, 3)  # under its own key it would be used
        assert lines(trap)["helper"] == [("shapes/util.py", 44)]
    shipped = path.read_bytes()

    index = SymbolIndex(project, cache=path)
    index.refresh()
    assert lines(index) == TRUE_LINES
    assert (index.parsed, index.reused) == (3, 0)
    assert path.read_bytes() != shipped  # rebuilt and saved under this user's key
    again = SymbolIndex(project, cache=path)
    again.refresh()
    assert (again.parsed, again.reused, lines(again)) == (0, 3, TRUE_LINES)


def test_the_key_is_made_once_private_and_outside_the_project(tmp_path: Path) -> None:
    project = make_project(tmp_path / "repo")
    key_file = Path(os.environ["XDG_CACHE_HOME"]) / "agent-lsp" / "cache.key"
    SymbolIndex(project, cache=persisted.cache_path(project)).refresh()
    first = key_file.read_bytes()
    assert len(first) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert not any(p.name == "cache.key" for p in project.rglob("*"))
    SymbolIndex(project, cache=persisted.cache_path(project)).refresh()
    assert key_file.read_bytes() == first


def test_a_key_readable_by_others_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    key_file = tmp_path / "cache" / "agent-lsp" / "cache.key"
    key_file.parent.mkdir(parents=True)
    key_file.write_bytes(b"k" * 32)
    key_file.chmod(0o644)
    project = make_project(tmp_path / "repo")
    path = persisted.cache_path(project)
    index = SymbolIndex(project, cache=path)
    index.refresh()
    assert lines(index) == TRUE_LINES  # the index works, it is not persisted
    assert not path.exists()
    assert key_file.read_bytes() == b"k" * 32  # left as it was
