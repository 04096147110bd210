"""The persisted symbol index: a second start parses nothing; a damaged, foreign or stale cache
is rebuilt, never trusted; the process pool gives the symbols the serial path gives."""

from __future__ import annotations

import marshal
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from agent_lsp import signing as cachekey
from agent_lsp.config.schema import Settings
from agent_lsp.memory.layout import AGENT_DIR
from agent_lsp.session import Session
from agent_lsp.symbols import FileSymbols, SymbolIndex, extract
from agent_lsp.symbols import cache as persisted
from agent_lsp.symbols.model import Engine, Language
from agent_lsp.symbols.worker import ProcessExtractor
from tests.test_symbols_worker import child_pids as children

HOUR_NS = 3600 * 1_000_000_000
FILES = {
    "app.py": "from shapes.stack import Stack\n\n\ndef main():\n    s = Stack()\n    s.push(1)\n",
    "shapes/stack.py": (
        "class Stack:\n    def push(self, item):\n        self.items.append(item)\n\n"
        "    def pop(self):\n        return self.items.pop()\n"
    ),
    "shapes/util.py": "def helper(x):\n    return x\n",
    "web/client.js": "export class Stack {}\nfunction push(s) {\n  s.push(2);\n}\n",
}


class Counting:
    """`extract`, counting the texts it parses (an extractor, the index's public seam)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str, language: Language, engine: Engine = "auto") -> FileSymbols:
        self.calls += 1
        return extract(text, language, engine)


def make_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        settle(path)
    return root


def settle(path: Path) -> None:
    """Date the file an hour back, as a file of a tree checked out earlier (not just written:
    those the cache re-checks by digest whatever their stamp)."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - HOUR_NS))


def snapshot(index: SymbolIndex) -> list[tuple[str, FileSymbols]]:
    return [(f.path, f.symbols) for f in index.files()]


def fresh(root: Path) -> list[tuple[str, FileSymbols]]:
    index = SymbolIndex(root)
    index.refresh()
    return snapshot(index)


def test_a_second_start_of_the_session_parses_nothing(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    first = Counting()
    session = Session(project, Settings.model_validate({}), extractor=first)
    session.symbols.refresh()
    session.close()
    assert first.calls == 4

    again = Counting()
    second = Session(project, Settings.model_validate({}), extractor=again)
    assert second.symbols.refresh() == 4
    assert again.calls == 0
    assert snapshot(second.symbols) == fresh(project)
    assert [h.path for h in second.symbols.definitions("Stack.push")] == ["shapes/stack.py"]
    assert second.symbols.occurrences("Stack") == {
        "app.py": 2,
        "shapes/stack.py": 1,
        "web/client.js": 1,
    }
    second.close()


def test_the_cache_stays_out_of_git(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    index = SymbolIndex(project, cache=persisted.cache_path(project))
    index.refresh()
    assert persisted.cache_path(project) == project / AGENT_DIR / "cache" / "symbols.bin"
    assert persisted.cache_path(project).is_file()
    status = subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain"], capture_output=True, text=True
    )
    assert sorted(status.stdout.splitlines()) == ["?? app.py", "?? shapes/", "?? web/"]


def built(root: Path) -> SymbolIndex:
    index = SymbolIndex(root, cache=persisted.cache_path(root))
    index.refresh()
    return index


def test_a_warm_start_counts_and_saves_nothing_when_nothing_changed(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    cold = built(project)
    assert (cold.parsed, cold.reused) == (4, 0)
    saved = persisted.cache_path(project).read_bytes()
    os.utime(persisted.cache_path(project), ns=(0, 0))
    warm = built(project)
    assert (warm.parsed, warm.reused) == (0, 4)
    assert snapshot(warm) == snapshot(cold)
    warm.close()
    assert persisted.cache_path(project).stat().st_mtime_ns == 0  # not rewritten
    assert persisted.cache_path(project).read_bytes() == saved


@pytest.mark.parametrize(
    "damage",
    ["truncated", "garbage", "empty", "body flipped", "other fingerprint", "other shape"],
)
def test_a_damaged_or_foreign_cache_is_rebuilt(tmp_path: Path, damage: str) -> None:
    project = make_project(tmp_path)
    built(project).close()
    path = persisted.cache_path(project)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "body flipped":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:  # authenticated, but not ours to use
        code = persisted._code_digest()  # pyright: ignore[reportPrivateUsage]
        stored: tuple[object, ...] = (
            (("other", 0), code, [])
            if damage == "other fingerprint"
            else (persisted.fingerprint("auto"), code, [("x", 1)])
        )
        body = marshal.dumps(stored)  # pyright: ignore[reportArgumentType]
        secret = cachekey.user_key()
        assert secret is not None  # authenticated: only the fingerprint or shape is wrong
        path.write_bytes(persisted.MAGIC + cachekey.mac(secret, body) + body)
    again = built(project)
    assert (again.parsed, again.reused) == (4, 0)
    assert snapshot(again) == fresh(project)
    assert persisted.load(path, "auto").keys() == set(FILES)  # and saved whole again


def test_a_file_changed_with_its_size_and_mtime_put_back_is_parsed_again(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    built(project).close()
    util = project / "shapes/util.py"
    before = util.stat()
    util.write_text(FILES["shapes/util.py"].replace("helper", "hamper"))  # the same size
    os.utime(util, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (util.stat().st_size, util.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = built(project)
    assert (again.parsed, again.reused) == (1, 3)
    assert [h.path for h in again.definitions("hamper")] == ["shapes/util.py"]
    assert again.definitions("helper") == []
    assert snapshot(again) == fresh(project)


def test_a_touched_file_is_hashed_not_parsed_and_changes_are_seen(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    built(project).close()
    stack = project / "shapes/stack.py"
    os.utime(stack)  # touched: new mtime, same bytes
    (project / "web/client.js").unlink()
    (project / "shapes/new.py").write_text("def fresh():\n    pass\n")
    app = project / "app.py"
    app.write_text(FILES["app.py"] + "\n\ndef second():\n    pass\n")
    again = built(project)
    assert (again.parsed, again.reused) == (2, 2)  # new.py and app.py parsed
    assert snapshot(again) == fresh(project)
    assert again.file("web/client.js") is None
    again.close()
    third = built(project)  # the new stamps were saved: nothing to read or parse
    assert (third.parsed, third.reused) == (0, 4)
    assert snapshot(third) == snapshot(again)


def test_just_written_files_are_checked_by_digest_on_the_next_start(tmp_path: Path) -> None:
    """A file written within the clock tick of its read may change again with size and mtime
    kept: entries that recent are saved without their stamp, so the next start hashes them."""
    project = make_project(tmp_path)
    util = project / "shapes/util.py"
    util.write_text("def recent():\n    pass\n")  # mtime: now
    built(project).close()
    info = util.stat()
    util.write_text("def resent():\n    pass\n")  # same size; the mtime put back below
    os.utime(util, ns=(info.st_atime_ns, info.st_mtime_ns))
    again = built(project)
    assert again.parsed == 1
    assert [h.path for h in again.definitions("resent")] == ["shapes/util.py"]


def test_a_cache_folder_linked_out_of_the_project_is_not_written(tmp_path: Path) -> None:
    project = make_project(tmp_path / "project")
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / AGENT_DIR).mkdir()
    (project / AGENT_DIR / "cache").symlink_to(outside)
    index = built(project)
    assert len(index) == 4
    index.close()
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "link out", "folder"])
def test_a_planted_cache_that_is_no_regular_file_is_ignored(tmp_path: Path, kind: str) -> None:
    project = make_project(tmp_path / "project")
    path = persisted.cache_path(project)
    path.parent.mkdir(parents=True)
    outside = tmp_path / "outside.bin"
    if kind == "fifo":
        os.mkfifo(path)  # reading it would wait for a writer forever
    elif kind == "link out":
        built(project).close()
        outside.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(outside)
    else:
        path.mkdir()
    index = built(project)
    assert (index.parsed, index.reused) == (4, 0)
    assert snapshot(index) == fresh(project)
    if kind == "link out":
        assert not path.is_symlink()  # the link was replaced, the file outside left alone
        assert persisted.load(path, "auto", project).keys() == set(FILES)


def stdlib_copy(target: Path, count: int = 40) -> Path:
    """A copy of real files: the biggest `count` of this interpreter's standard library."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    sources = sorted(stdlib.glob("*.py"), key=lambda p: (-p.stat().st_size, p.name))[:count]
    for n, source in enumerate(sources):
        folder = target / f"pkg{n % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / source.name)
    return target


def test_the_process_pool_gives_the_symbols_of_the_serial_path(tmp_path: Path) -> None:
    tree = stdlib_copy(tmp_path)
    before = children()
    serial = SymbolIndex(tree)
    assert serial.refresh() == 40
    extractor = ProcessExtractor(workers=2, pool_bytes=1)
    pooled = SymbolIndex(tree, extractor=extractor)
    assert pooled.refresh() == 40
    assert [(f.path, f.symbols, f.digest) for f in pooled.files()] == [
        (f.path, f.symbols, f.digest) for f in serial.files()
    ]
    assert extractor.served > 0
    assert extractor.pid is None  # the pool of the build is shut down; no child left running
    assert children() <= before
    pooled.close()


def test_a_python_project_s_index_is_saved_and_loaded_without_tree_sitter(
    tmp_path: Path,
) -> None:
    project = tmp_path / "py"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "mod.py").write_text("class Stack:\n    def push(self, x):\n        pass\n")
    (project / "app.py").write_text("from pkg.mod import Stack\nStack().push(1)\n")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from agent_lsp.symbols import SymbolIndex\n"
        "from agent_lsp.symbols.cache import cache_path\n"
        "root = Path(sys.argv[1])\n"
        "index = SymbolIndex(root, cache=cache_path(root))\n"
        "index.refresh()\n"
        "index.close()\n"
        "warm = SymbolIndex(root, cache=cache_path(root))\n"
        "warm.refresh()\n"
        "print(warm.parsed, warm.reused, [h.path for h in warm.definitions('Stack.push')])\n"
        "print(sorted(m for m in sys.modules if m.startswith('tree_sitter')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(project)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.stdout.splitlines() == ["0 2 ['pkg/mod.py']", "[]"]
    # a JavaScript file later: its engine is described when an index holding it is saved
    (project / "web.js").write_text("export function draw() { return 1; }\n")
    index = SymbolIndex(project, cache=persisted.cache_path(project))
    assert index.refresh() == 3 and index.parsed == 1 and index.reused == 2
    index.close()
    stored = persisted.load(persisted.cache_path(project), "auto")
    assert sorted(stored) == ["app.py", "pkg/mod.py", "web.js"]
