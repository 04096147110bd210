"""`ProcessExtractor`: symbol extraction in a real child process, equal to in-process `extract`;
started lazily, replaced when it dies, gone after `close()` and with its parent, started again
by a later call."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

import pytest

from agent_lsp.symbols import SymbolIndex, extract
from agent_lsp.symbols.model import Engine, Language
from agent_lsp.symbols.worker import THRESHOLD, ProcessExtractor

# One unit of source per language, `{i}` making its names unique; repeated past the threshold.
UNITS: dict[Language, tuple[str, str]] = {  # header, unit
    "python": (
        "import os\n\n\n",
        "class Shape{i}(Base):\n"
        '    """Area of shape {i}: def fake(): pass"""\n'
        "\n"
        "    def area(self, x: int = {i}) -> int:\n"
        "        return helper_{i}(x) + self.size  # helper_{i} again\n"
        "\n"
        "\n"
        "def helper_{i}(value,\n"
        "             scale=(1, 2)):\n"
        "    return value * {i} + café\n"
        "\n"
        "\n",
    ),
    "javascript": (
        'import { Base } from "./base.js";\n\n',
        "export class Widget{i} extends Base {{\n"
        '  render(props) {{ return draw{i}(props, "function fake() {{}}"); }}\n'
        "}}\n"
        "export function draw{i}(p, label) {{ return p.size + {i}; }}\n"
        "const make{i} = (x) => new Widget{i}(x);\n"
        "\n",
    ),
    "typescript": (
        "",
        "export interface Shape{i} {{ area(): number; name: string; }}\n"
        "export type Point{i} = {{ x: number; y: number }};\n"
        "export class Box{i} implements Shape{i} {{\n"
        '  name = "box";\n'
        "  area(): number {{ return compute{i}(this.name); }}\n"
        "}}\n"
        "function compute{i}(s: string): number {{ return s.length * {i}; }}\n"
        "\n",
    ),
    "go": (
        "package shapes\n\n",
        "type Point{i} struct {{\n"
        "\tX, Y int\n"
        "}}\n"
        "\n"
        "func (p *Point{i}) Move(dx int) {{\n"
        "\tp.X += dx // Move{i}\n"
        "}}\n"
        "\n"
        "func New{i}(x int) *Point{i} {{\n"
        '\ts := "func Fake() {{}}"\n'
        "\treturn &Point{i}{{X: x}}\n"
        "}}\n"
        "\n",
    ),
}
SUFFIX: dict[Language, str] = {"python": "py", "javascript": "js", "typescript": "ts", "go": "go"}
ENGINES: list[Engine] = ["auto", "regex"]


def source(language: Language, size: int, offset: int = 0) -> tuple[str, int]:
    """A text of `language` of at least `size` characters, and how many units it holds (each
    with one top-level definition or more)."""
    header, unit = UNITS[language]
    parts = [header]
    length = len(header)
    count = 0
    while length < size:
        parts.append(unit.format(i=offset + count))
        length += len(parts[-1])
        count += 1
    return "".join(parts), count


def alive(pid: int) -> bool:
    """Whether process `pid` exists and has not exited (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


def child_pids() -> set[int]:
    """This process's living children, from /proc."""
    me = os.getpid()
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def extractor() -> Iterator[ProcessExtractor]:
    with ProcessExtractor() as ex:
        yield ex


@pytest.fixture(scope="module")
def shared() -> Iterator[ProcessExtractor]:
    """One child for the equality tests (starting one costs a few hundred ms)."""
    with ProcessExtractor() as ex:
        yield ex


# --------------------------------------------------------------------------- same results


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("language", list(UNITS))
def test_big_texts_give_what_extract_gives(
    shared: ProcessExtractor, language: Language, engine: Engine
) -> None:
    text, units = source(language, 5 * THRESHOLD)
    served = shared.served
    symbols = shared(text, language, engine)
    assert symbols == extract(text, language, engine)
    assert len(symbols.definitions) >= units
    assert shared.served == served + 1  # answered by the child
    assert shared.crashes == 0


def test_a_small_text_is_extracted_in_the_calling_thread() -> None:
    before = child_pids()
    with ProcessExtractor() as ex:
        text, units = source("python", THRESHOLD // 2)
        symbols = ex(text, "python")
        assert symbols == extract(text, "python")
        assert len(symbols.definitions) == 3 * units
        assert (ex.pid, ex.served, child_pids()) == (None, 0, before)


def test_the_child_starts_on_the_first_big_text_and_is_reused() -> None:
    before = child_pids()
    with ProcessExtractor() as ex:
        assert ex.pid is None
        assert child_pids() == before
        first, _ = source("go", 2 * THRESHOLD)
        second, _ = source("go", 3 * THRESHOLD, offset=1000)
        assert ex(first, "go") == extract(first, "go")
        pid = ex.pid
        assert pid is not None
        assert child_pids() == before | {pid}
        assert ex(second, "go") == extract(second, "go")
        assert (ex.pid, ex.served) == (pid, 2)


def test_files_are_read_by_the_child(shared: ProcessExtractor, tmp_path: Path) -> None:
    files: list[tuple[Path, Language, int]] = []
    for n, language in enumerate(list(UNITS) * 10):  # big ones, and small ones in between
        size = THRESHOLD * (n % 4 + 1) if n % 10 == 0 else THRESHOLD // 3
        text, _ = source(language, size, offset=n * 1000)
        path = tmp_path / f"m{n}.{SUFFIX[language]}"
        path.write_text(text)
        files.append((path, language, path.stat().st_size))
    files.insert(2, (tmp_path / "missing.py", "python", 10 * THRESHOLD))
    served = shared.served
    found = list(shared.extract_files(files))
    assert sorted(position for position, _ in found) == list(range(len(files)))
    assert dict(found) == {
        n: None if not path.exists() else extract(path.read_text(), language)
        for n, (path, language, _) in enumerate(files)
    }
    assert shared.served > served


def test_an_error_of_extract_is_raised_as_extract_raises_it(shared: ProcessExtractor) -> None:
    text, _ = source("python", 2 * THRESHOLD)
    cobol = cast(Language, "cobol")
    with pytest.raises(KeyError) as plain:
        extract(text, cobol)
    with pytest.raises(KeyError) as through_child:
        shared(text, cobol)
    assert through_child.value.args == plain.value.args
    assert shared(text, "python") == extract(text, "python")  # and the child still serves
    assert shared.crashes == 0


# --------------------------------------------------------------------------- the index


def write_project(root: Path) -> None:
    for n, language in enumerate(UNITS):
        big, _ = source(language, 3 * THRESHOLD, offset=n * 1000)
        small, _ = source(language, THRESHOLD // 4, offset=n * 1000 + 500)
        (root / "pkg" / language).mkdir(parents=True)
        (root / "pkg" / language / f"big.{SUFFIX[language]}").write_text(big)
        (root / "pkg" / language / f"small.{SUFFIX[language]}").write_text(small)
    (root / "app.py").write_text(
        "from pkg.python.big import Shape3, helper_3\n\n\ndef main():\n    return helper_3(1)\n"
    )
    (root / "bad.py").write_bytes(b"def broken\xff(x):\n    return x\n" * 200)


def snapshot(index: SymbolIndex) -> object:
    names = ["helper_3", "Shape3.area", "area", "Move", "Widget1001", "compute2003", "broken"]
    return (
        index.files(),
        {name: index.definitions(name) for name in names},
        {name: index.references(name, limit=1000) for name in names},
        index.occurrences("helper_3"),
    )


def test_an_index_built_through_the_child_equals_one_built_in_process(
    extractor: ProcessExtractor, tmp_path: Path
) -> None:
    write_project(tmp_path)
    plain = SymbolIndex(tmp_path)
    through_child = SymbolIndex(tmp_path, extractor=extractor)
    assert through_child.refresh() == plain.refresh() == 10
    assert snapshot(through_child) == snapshot(plain)
    assert {h.path for h in through_child.definitions("area")} == {
        "pkg/python/big.py",
        "pkg/python/small.py",
        "pkg/typescript/big.ts",
        "pkg/typescript/small.ts",
    }
    assert extractor.served > 0

    big_ts = tmp_path / "pkg/typescript/big.ts"
    buffer, _ = source("typescript", 4 * THRESHOLD, offset=7000)
    assert through_child.update_file(big_ts, buffer) and plain.update_file(big_ts, buffer)
    (tmp_path / "pkg/go/big.go").write_text(source("go", 6 * THRESHOLD, offset=8000)[0])
    (tmp_path / "pkg/python/small.py").write_text("def fresh():\n    pass\n")
    (tmp_path / "app.py").unlink()
    assert through_child.refresh() == plain.refresh() == 3
    assert snapshot(through_child) == snapshot(plain)
    through_child.close_file(big_ts)
    plain.close_file(big_ts)
    assert snapshot(through_child) == snapshot(plain)
    assert extractor.crashes == 0


def test_closing_the_index_stops_the_child(tmp_path: Path) -> None:
    write_project(tmp_path)
    index = SymbolIndex(tmp_path, extractor=ProcessExtractor())
    index.refresh()
    extractor = cast(ProcessExtractor, index.extractor)
    pid = extractor.pid
    assert pid is not None and alive(pid)
    index.close()
    index.close()
    assert extractor.pid is None
    assert not alive(pid)
    assert pid not in child_pids()
    assert {h.path for h in index.definitions("Move")} == {"pkg/go/big.go", "pkg/go/small.go"}
    SymbolIndex(tmp_path).close()  # the plain extract has nothing to close


# --------------------------------------------------------------------------- failures


def test_a_killed_child_is_replaced(
    extractor: ProcessExtractor, caplog: pytest.LogCaptureFixture
) -> None:
    text, _ = source("python", 4 * THRESHOLD)
    huge, _ = source("python", 200 * THRESHOLD, offset=100_000)  # ~150 ms to extract
    expected, expected_huge = extract(text, "python"), extract(huge, "python")
    assert extractor(text, "python") == expected
    first = extractor.pid
    assert first is not None
    with ThreadPoolExecutor(1) as threads:
        running = threads.submit(extractor, huge, "python")
        os.kill(first, signal.SIGKILL)
        assert running.result() == expected_huge
    assert extractor(text, "python") == expected
    served = extractor.served
    assert extractor(text, "python") == expected
    assert extractor.served == served + 1
    second = extractor.pid
    assert second is not None and second != first and alive(second)
    assert extractor.crashes == 1
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    assert warning.getMessage().startswith(
        "symbol extraction worker process failed (ChildDied: the worker process exited "
        "(killed by SIGKILL)"
    )
    assert warning.getMessage().endswith(
        "; 1 of 3): extracting in the calling thread until a fresh worker starts on a later call"
    )


def test_after_max_crashes_everything_stays_in_the_calling_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text, _ = source("javascript", 4 * THRESHOLD)
    expected = extract(text, "javascript")
    before = child_pids()
    with ProcessExtractor(max_crashes=2) as ex:
        for _ in range(2):
            assert ex(text, "javascript") == expected
            pid = ex.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            assert wait_for(lambda pid=pid: not alive(pid))
            assert ex(text, "javascript") == expected  # the dead child noticed, done here
        served = ex.served
        assert ex(text, "javascript") == expected
        assert (ex.crashes, ex.served, ex.pid) == (2, served, None)
        assert child_pids() == before
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage().rpartition("; ")[2] for r in warnings] == [
        "1 of 2): extracting in the calling thread until a fresh worker starts on a later call",
        "2 of 2): extracting in the calling thread from now on",
    ]


def test_close_leaves_no_child_and_a_later_call_starts_a_fresh_one() -> None:
    text, _ = source("typescript", 2 * THRESHOLD)
    with ProcessExtractor() as ex:
        assert ex(text, "typescript") == extract(text, "typescript")
        pid = ex.pid
        assert pid is not None and alive(pid)
        ex.close()
        ex.close()
        assert not alive(pid)
        assert pid not in child_pids()
        assert ex(text, "typescript") == extract(text, "typescript")
        again = ex.pid
        assert again is not None and again != pid and alive(again)
        assert (ex.served, ex.started, ex.crashes) == (2, 2, 0)


CHILD_OF_A_DEAD_PARENT = """\
import os, signal
from agent_lsp.symbols.worker import ProcessExtractor
extractor = ProcessExtractor(threshold=0)
extractor("def f(): pass\\n", "python")
print(extractor.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_child_exits_with_its_parent() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", CHILD_OF_A_DEAD_PARENT],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert parent.stdout is not None
    with parent.stdout:
        pid = int(parent.stdout.readline())
    assert parent.wait() == -signal.SIGKILL
    try:
        assert wait_for(lambda: not alive(pid))
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- threads


def test_threads_extract_concurrently(extractor: ProcessExtractor, tmp_path: Path) -> None:
    texts: list[tuple[str, Language]] = [
        (source(language, (2 + n % 3) * THRESHOLD, offset=n * 100)[0], language)
        for n, language in enumerate(list(UNITS) * 6)
    ]
    texts.append((source("go", THRESHOLD // 2)[0], "go"))  # a small one, done in-thread
    expected = [extract(text, language) for text, language in texts]
    write_project(tmp_path)
    index = SymbolIndex(tmp_path, extractor=extractor)
    building = threading.Thread(target=index.refresh)
    building.start()
    with ThreadPoolExecutor(6) as threads:
        found = list(threads.map(extractor, *zip(*texts, strict=True)))
    building.join()
    plain = SymbolIndex(tmp_path)
    plain.refresh()
    assert found == expected
    assert snapshot(index) == snapshot(plain)
    assert extractor.crashes == 0
