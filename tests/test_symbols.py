"""The symbol index: extraction (tree-sitter and the regex fallback), the project index with
editor buffers and mtime refresh, `find_symbol`, and the repository map."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_lsp.messages import ToolStatus
from agent_lsp.project.workspace import Workspace
from agent_lsp.symbols import (
    SymbolIndex,
    describe_engines,
    engine_for,
    extract,
    repo_map,
    ts_engine,
)
from agent_lsp.symbols.lexical import identifier_counts, iter_references, reference_lines
from agent_lsp.symbols.model import Engine, Language
from agent_lsp.symbols.repomap import estimate_tokens
from agent_lsp.tools.symbols import FindSymbolArgs, FindSymbolTool
from tests.fakes.channel import RecordingChannel

Row = tuple[str, str, int, int, str | None, str]

PYTHON = '''\
"""def not_a_function(): pass"""
import os


@decorator
def top(a, b=(1, 2),
        c=3) -> int:
    """class NotAClass: ..."""
    def inner():
        return 1
    return inner()


class Stack(list):
    label = "def fake():"

    def push(self, item):
        self.append(item)

    async def drain(self):
        # def hidden(): pass
        text = """
def fake():
"""
        return text
'''
PYTHON_DEFS: list[Row] = [
    ("top", "function", 6, 11, None, "def top(a, b=(1, 2), c=3) -> int"),
    ("inner", "function", 9, 10, "top", "def inner()"),
    ("Stack", "class", 14, 25, None, "class Stack(list)"),
    ("push", "method", 17, 18, "Stack", "def push(self, item)"),
    ("drain", "method", 20, 25, "Stack", "async def drain(self)"),
]

JAVASCRIPT = """\
// function commented() {}
import helper from "./helper.js";

export function alpha(a, b = {}) {
  const s = "function fake() {}";
  return helper(a, b);
}

export default class Beta extends Base {
  constructor(x) { super(x); }
  static create() { return new Beta(build(1)); }
  async #secret(a) {
    if (a) { return 2; }
  }
}

const gamma = async (x) => {
  return x;
};
let delta = function (y) { return y; };
"""
JAVASCRIPT_DEFS: list[Row] = [
    ("alpha", "function", 4, 7, None, "export function alpha(a, b = {})"),
    ("Beta", "class", 9, 15, None, "export default class Beta extends Base"),
    ("constructor", "method", 10, 10, "Beta", "constructor(x)"),
    ("create", "method", 11, 11, "Beta", "static create()"),
    ("#secret", "method", 12, 14, "Beta", "async #secret(a)"),
    ("gamma", "function", 17, 19, None, "const gamma = async (x) =>"),
    ("delta", "function", 20, 20, None, "let delta = function (y)"),
]

TYPESCRIPT = """\
export interface Shape {
  area(): number;
  name: string;
}
export type Point = { x: number; y: number };
enum Color { Red, Green }

export abstract class Base<T> implements Shape {
  private items: T[] = [];
  constructor(private readonly id: string) {}
  public area(): number {
    return total(
      this.items,
    );
  }
}

export const make = <T,>(value: T): Base<T> => {
  return new Impl(value);
};
"""
TYPESCRIPT_DEFS: list[Row] = [
    ("Shape", "interface", 1, 4, None, "export interface Shape"),
    ("area", "method", 2, 2, "Shape", "area(): number"),
    ("Point", "type", 5, 5, None, "export type Point = { x: number; y: number }"),
    ("Color", "enum", 6, 6, None, "enum Color"),
    ("Base", "class", 8, 16, None, "export abstract class Base<T> implements Shape"),
    ("constructor", "method", 10, 10, "Base", "constructor(private readonly id: string)"),
    ("area", "method", 11, 15, "Base", "public area(): number"),
    ("make", "function", 18, 20, None, "export const make = <T,>(value: T): Base<T> =>"),
]

GO = """\
package shapes

// func Commented() {}
type Point struct {
	X, Y int
}

type (
	ID    int
	Shape interface {
		Area() float64
	}
)

func New(x int) *Point {
	s := "func Fake() {}"
	_ = s
	return &Point{X: x}
}

func (p *Point) Move(dx int) {
	p.X += dx
}

func (s *Stack[T]) Push(v T) {}
"""
GO_DEFS: list[Row] = [
    ("Point", "struct", 4, 6, None, "type Point struct"),
    ("ID", "type", 9, 9, None, "ID int"),
    ("Shape", "interface", 10, 12, None, "Shape interface"),
    ("New", "function", 15, 19, None, "func New(x int) *Point"),
    ("Move", "method", 21, 23, "Point", "func (p *Point) Move(dx int)"),
    ("Push", "method", 25, 25, "Stack", "func (s *Stack[T]) Push(v T)"),
]

SAMPLES: list[tuple[Language, str, list[Row]]] = [
    ("python", PYTHON, PYTHON_DEFS),
    ("javascript", JAVASCRIPT, JAVASCRIPT_DEFS),
    ("typescript", TYPESCRIPT, TYPESCRIPT_DEFS),
    ("tsx", TYPESCRIPT, TYPESCRIPT_DEFS),
    ("go", GO, GO_DEFS),
]


def engines() -> list[Engine]:
    return ["tree-sitter", "regex"]


def require(engine: Engine, language: Language) -> None:
    if engine == "tree-sitter" and not ts_engine.available(language):
        if os.environ.get("CI"):
            pytest.fail(f"tree-sitter for {language} is required in CI")
        pytest.skip(f"tree-sitter for {language} not installed")


@pytest.mark.parametrize("engine", engines())
@pytest.mark.parametrize(("language", "source", "expected"), SAMPLES, ids=lambda v: str(v)[:10])
def test_definitions_per_language(
    engine: Engine, language: Language, source: str, expected: list[Row]
) -> None:
    require(engine, language)
    symbols = extract(source, language, engine)
    assert symbols.engine == engine
    assert symbols.language == language
    rows = [
        (d.name, d.kind, d.line, d.end_line, d.container, d.signature) for d in symbols.definitions
    ]
    assert rows == expected


def test_references_skip_comments_strings_and_keywords() -> None:
    source = 'x = run(x)  # run later\ny = "run" + f(x)\nrun\n'
    assert identifier_counts(source, "python") == {"x": 3, "run": 2, "y": 1, "f": 1}
    assert list(iter_references(source, "python")) == [
        ("x", 1),
        ("run", 1),
        ("x", 1),
        ("y", 2),
        ("f", 2),
        ("x", 2),
        ("run", 3),
    ]
    assert list(reference_lines(source, "python", "run")) == [1, 3]
    go = "package p\n// Area is\nfunc Area() { s := `Area`; _ = s; Area() }\n"
    assert identifier_counts(go, "go") == {"p": 1, "Area": 2, "s": 2, "_": 1}
    js = "const $el = `${tpl}`; /* $el */ use($el, 0x1f);"
    assert identifier_counts(js, "javascript") == {"$el": 2, "use": 1}


def hide_modules(monkeypatch: pytest.MonkeyPatch, *names: str) -> Iterator[None]:
    """An environment where importing `names` fails (None in sys.modules), grammars reloaded."""
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)
    ts_engine.reset()
    yield
    monkeypatch.undo()
    ts_engine.reset()


@pytest.fixture
def no_go_grammar(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from hide_modules(monkeypatch, "tree_sitter_go")


@pytest.fixture
def no_tree_sitter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from hide_modules(monkeypatch, "tree_sitter")


@pytest.mark.usefixtures("no_go_grammar")
def test_a_missing_grammar_falls_back_to_regex_and_says_so() -> None:
    assert engine_for("go") == "regex"
    assert engine_for("javascript") == "tree-sitter"
    assert engine_for("python") == "regex"  # scanned, with or without a grammar
    assert engine_for("python", "tree-sitter") == "tree-sitter"
    symbols = extract(GO, "go")
    assert symbols.engine == "regex"
    assert [d.name for d in symbols.definitions] == [row[0] for row in GO_DEFS]
    assert "regex fallback (go; ModuleNotFoundError: import of tree_sitter_go halted" in (
        describe_engines()
    )
    with pytest.raises(LookupError, match="tree-sitter is not usable for go"):
        extract(GO, "go", "tree-sitter")


@pytest.mark.usefixtures("no_tree_sitter")
def test_without_tree_sitter_everything_uses_the_regex_engine(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(PYTHON)
    index = SymbolIndex(tmp_path)
    index.refresh()
    assert index.describe() == (
        "1 file indexed; engine: scanner (python); regex fallback (go, javascript, tsx, "
        "typescript; ModuleNotFoundError: import of tree_sitter halted; None in sys.modules)"
    )
    assert [f"{h.path}:{h.definition.line}" for h in index.definitions("push")] == ["m.py:17"]


def test_forced_regex_engine_is_reported() -> None:
    assert describe_engines("regex") == (
        "scanner (python); regex fallback (go, javascript, tsx, typescript; forced)"
    )
    assert describe_engines("tree-sitter").startswith("tree-sitter ")
    assert describe_engines("tree-sitter").endswith(" (go, javascript, python, tsx, typescript)")
    assert describe_engines().endswith(" (go, javascript, tsx, typescript); scanner (python)")


# --------------------------------------------------------------------------- the index


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


PROJECT = {
    "shapes/stack.py": (
        "class Stack:\n"
        "    def push(self, item):\n"
        "        self.items.append(item)\n"
        "\n"
        "    def pop(self):\n"
        "        return self.items.pop()\n"
    ),
    "shapes/util.py": "def helper(x):\n    return x\n",
    "app.py": (
        "from shapes.stack import Stack\n"
        "\n"
        "\n"
        "def main():\n"
        "    s = Stack()\n"
        "    s.push(1)  # push it\n"
        '    print("Stack")\n'
        "    return s\n"
    ),
    "web/client.js": "import { Stack } from './stack.js';\nexport function render(stack) {\n"
    "  stack.push(2);\n}\n",
    "node_modules/lib/index.js": "export function push() {}\n",
    ".venv/lib/site.py": "def push(): pass\n",
    "env/pyvenv.cfg": "home = /usr\n",
    "env/lib/thing.py": "def push(): pass\n",
    "build/lib/app.py": "def push(): pass\n",
    "shapes/__pycache__/x.py": "def push(): pass\n",
    "notes.txt": "push\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path, PROJECT)
    (tmp_path / "big.py").write_text("def huge(): pass\n" + "#" * 2000 + "\n")
    return tmp_path


def where(index: SymbolIndex, name: str) -> list[str]:
    return [f"{h.path}:{h.definition.line}" for h in index.definitions(name)]


def test_index_skips_vendored_and_big_files(project: Path) -> None:
    index = SymbolIndex(project, max_file_bytes=1000)
    assert index.refresh() == 4
    assert [f.path for f in index.files()] == [
        "app.py",
        "shapes/stack.py",
        "shapes/util.py",
        "web/client.js",
    ]
    assert where(index, "push") == ["shapes/stack.py:2"]
    assert where(index, "Stack.push") == ["shapes/stack.py:2"]
    assert where(index, "Other.push") == []
    assert index.occurrences("Stack") == {"app.py": 2, "shapes/stack.py": 1, "web/client.js": 1}
    assert [(r.path, r.line, r.text) for r in index.references("push")] == [
        ("app.py", 6, "s.push(1)  # push it"),
        ("web/client.js", 3, "stack.push(2);"),
    ]
    assert len(index.references("Stack", limit=2)) == 2
    assert index.names_like("stak") == ["Stack"]
    assert index.refresh() == 0


def test_buffers_win_until_closed_and_mtime_refresh(project: Path) -> None:
    index = SymbolIndex(project)
    index.refresh()
    util = project / "shapes/util.py"
    assert index.update_file(util, "\n\ndef helper(x, y):\n    return x\n")
    assert where(index, "helper") == ["shapes/util.py:3"]
    assert index.definitions("helper")[0].definition.signature == "def helper(x, y)"
    assert not index.update_file(project / "notes.txt", "def x(): pass\n")
    assert not index.update_file(project.parent / "elsewhere.py", "def x(): pass\n")

    util.write_text("def helper2(x):\n    return x\n")  # the disk changes under an open buffer
    assert index.refresh() == 0
    assert where(index, "helper") == ["shapes/util.py:3"]
    index.close_file(util)
    assert where(index, "helper") == []
    assert where(index, "helper2") == ["shapes/util.py:1"]

    stack = project / "shapes/stack.py"
    stack.write_text(stack.read_text().replace("def pop(self)", "def pop_last(self)"))
    info = stack.stat()
    os.utime(stack, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    (project / "web/client.js").unlink()
    write(project, {"shapes/new.py": "def fresh():\n    pass\n"})
    assert index.refresh() == 3
    assert where(index, "pop") == []
    assert where(index, "pop_last") == ["shapes/stack.py:5"]
    assert where(index, "fresh") == ["shapes/new.py:1"]
    assert index.file("web/client.js") is None


def test_sync_buffers_follows_the_editor(project: Path) -> None:
    index = SymbolIndex(project)
    index.refresh()
    app = project / "app.py"
    assert index.sync_buffers({app: "def main2():\n    pass\n"}) == 1
    assert index.sync_buffers({app: "def main2():\n    pass\n"}) == 0
    assert where(index, "main2") == ["app.py:1"]
    assert index.sync_buffers({}) == 1  # closed: back to the disk
    assert where(index, "main2") == []
    assert where(index, "main") == ["app.py:4"]


def test_buffer_wins_over_a_concurrent_build(project: Path) -> None:
    index = SymbolIndex(project)
    worker = threading.Thread(target=index.refresh)
    worker.start()
    index.update_file(project / "shapes/util.py", "def from_buffer():\n    pass\n")
    worker.join()
    assert where(index, "from_buffer") == ["shapes/util.py:1"]
    assert where(index, "helper") == []
    assert index.built


# --------------------------------------------------------------------------- find_symbol


async def find(index: SymbolIndex, channel: RecordingChannel, name: str):
    tool = FindSymbolTool(Workspace(index.root, channel), index)
    return await tool.run(FindSymbolArgs(name=name))


async def test_find_symbol_reports_definitions_and_references(project: Path) -> None:
    index = SymbolIndex(project)
    channel = RecordingChannel({project / "web/client.js": "push(1);\n"})
    result = await find(index, channel, "push")
    assert result.status is ToolStatus.SUCCESS
    assert result.output == (
        "definitions of `push` (1):\n"
        "  shapes/stack.py:2 method in Stack: def push(self, item)\n"
        "references to `push`: 2 lines shown; 3 occurrences in 3 files, "
        "definition lines left out:\n"
        "  app.py:6: s.push(1)  # push it\n"
        "  web/client.js:1: push(1);"
    )
    assert result.metadata["indexed_files"] == 5
    assert "build_seconds" in result.metadata
    again = await find(index, channel, "Stack.push")
    assert again.output.splitlines()[2] == (
        "references to `push` (every `push`: receivers are not resolved): 2 lines shown; "
        "3 occurrences in 3 files, definition lines left out:"
    )
    assert "build_seconds" not in again.metadata


async def test_find_symbol_misses_and_bad_names(project: Path) -> None:
    index = SymbolIndex(project)
    channel = RecordingChannel()
    missing = await find(index, channel, "stak")
    assert missing.status is ToolStatus.SUCCESS
    assert missing.output == (
        "No definition of or reference to `stak` in 5 indexed files. Defined names like it: Stack."
    )
    assert missing.metadata["found"] is False
    library = await find(index, channel, "print")
    assert (
        library.output.splitlines()[0]
        == "no definition of `print` in the project (a library name?)"
    )
    bad = await find(index, channel, "two words")
    assert bad.status is ToolStatus.ERROR
    assert (
        bad.error
        == "'two words' is not an identifier; give one name such as `parse_args` or `Parser.parse`"
    )
    many = FindSymbolTool(Workspace(project, channel), index)
    many.max_references = 1
    capped = await many.run(FindSymbolArgs(name="Stack"))
    assert "1 lines shown (the first ones); 4 occurrences in 3 files" in capped.output


def test_find_symbol_contract() -> None:
    schema = FindSymbolArgs.model_json_schema()
    assert FindSymbolTool.name == "find_symbol"
    assert FindSymbolTool.read_only is True
    assert list(schema["properties"]) == ["name"]
    assert schema["required"] == ["name"]
    assert schema["additionalProperties"] is False


# --------------------------------------------------------------------------- repo map


@pytest.fixture
def ranked(tmp_path: Path) -> SymbolIndex:
    write(
        tmp_path,
        {
            "core.py": "class Engine:\n    def start(self):\n        pass\n\n\ndef boot():\n"
            "    pass\n",
            "used.py": "def popular():\n    pass\n",
            "a.py": "from used import popular\nfrom core import boot\npopular()\npopular()\n"
            "def alone():\n    pass\n",
            "b.py": "from used import popular\npopular()\n\n\ndef lonely():\n    pass\n",
            "mention.py": "def target_name():\n    pass\n",
        },
    )
    index = SymbolIndex(tmp_path)
    index.refresh()
    return index


def test_repo_map_ranks_focus_then_mentioned_then_references(ranked: SymbolIndex) -> None:
    text = repo_map(ranked, 1000, focus_files=["b.py"], mentioned=["target_name"])
    assert text == (
        "b.py:\n"
        "  5: def lonely()\n"
        "mention.py:\n"
        "  1: def target_name()\n"
        "used.py:\n"
        "  1: def popular()\n"
        "core.py:\n"
        "  1: class Engine\n"
        "    2: def start(self)\n"
        "  6: def boot()\n"
        "a.py:\n"
        "  5: def alone()\n"
    )
    plain = repo_map(ranked, 1000)
    assert plain.splitlines()[0] == "used.py:"


CORE = "core.py:\n  1: class Engine\n    2: def start(self)\n  6: def boot()\n"


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (0, ""),
        (6, ""),
        (12, "[5 more files not shown]\n"),
        (15, "core.py:\n  1: class Engine\n[4 more files not shown]\n"),
        (30, CORE + "used.py:\n  1: def popular()\n[3 more files not shown]\n"),
        (
            1000,
            CORE + "used.py:\n  1: def popular()\na.py:\n  5: def alone()\nb.py:\n"
            "  5: def lonely()\nmention.py:\n  1: def target_name()\n",
        ),
    ],
)
def test_repo_map_cuts_to_the_budget(ranked: SymbolIndex, budget: int, expected: str) -> None:
    assert repo_map(ranked, budget, focus_files=[ranked.root / "core.py"]) == expected


def test_repo_map_never_exceeds_the_budget(ranked: SymbolIndex) -> None:
    for budget in range(60):
        text = repo_map(ranked, budget, focus_files=["core.py"], mentioned=["popular"])
        assert estimate_tokens(text) <= budget
        assert len(text) <= budget * 4
