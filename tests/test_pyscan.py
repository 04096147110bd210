"""The Python scanner (`symbols/pyscan.py`): the definitions tree-sitter finds, without parsing.

Each case is checked twice: against the rows written here, and against tree-sitter's own
definitions of the same text (the engine Python used before the scanner), so that a case
cannot pass by agreeing with a wrong expectation. Then a sample of this interpreter's standard
library, file by file; then what an index built from the disk through a process pool keeps (the
child's definitions stay packed until read).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest

from agent_lsp.symbols import SymbolIndex, extract, pyscan
from agent_lsp.symbols.extract import engine_for
from agent_lsp.symbols.lexical import identifier_counts
from agent_lsp.symbols.model import Engine
from agent_lsp.symbols.packed import Definitions
from agent_lsp.symbols.worker import ProcessExtractor

Row = tuple[str, str, int, int, str | None]


def rows(text: str, engine: Engine) -> list[Row]:
    symbols = extract(text, "python", engine)
    return [(d.name, d.kind, d.line, d.end_line, d.container) for d in symbols.definitions]


def tree_sitter_rows(text: str) -> list[Row]:
    if engine_for("python", "tree-sitter") != "tree-sitter":
        if os.environ.get("CI"):
            pytest.fail("tree-sitter for python is required in CI")
        pytest.skip("tree-sitter for python not installed")
    return rows(text, "tree-sitter")


CASES: list[tuple[str, str, list[Row]]] = [
    (
        "trailing comments deeper than the definition are in its body, others not",
        "class A:\n"
        "    def f(self):\n"
        "        x = 1\n"
        "        # still f\n"
        "    # between\n"
        "\n"
        "    def g(self):\n"
        "        return 2\n"
        "# after A\n"
        "x = 3\n",
        [("A", "class", 1, 8, None), ("f", "method", 2, 4, "A"), ("g", "method", 7, 8, "A")],
    ),
    (
        "trailing comments end at the first one indented less than the body's code",
        "def f():\n"
        "    x = 1\n"
        "    # in f\n"
        "   # shallower than f's code: not in f, nor what follows\n"
        "    # nor this\n"
        "#def g():\n"
        "    # neither\n"
        "y = 2\n",
        [("f", "function", 1, 3, None)],
    ),
    (
        "a docstring is a body; a string at the margin ends one",
        'def f():\n    """Only a\n    docstring."""\n"""A string at the margin."""\n'
        "def g(): 'one line'\n",
        [("f", "function", 1, 3, None), ("g", "function", 5, 5, None)],
    ),
    (
        "lines inside brackets or after a backslash continue the line before",
        "def f():\n"
        "    x = call(\n"
        "1, 2)\n"
        "    y = [\n"
        "]\n"
        "    return x + \\\n"
        "y\n"
        "def g(a,\n"
        "      b=(1,\n"
        "2)):\n"
        "    pass\n",
        [("f", "function", 1, 7, None), ("g", "function", 8, 11, None)],
    ),
    (
        "nothing in a comment or a string is a definition; a string may continue after a backslash",
        "s = '''\n"
        "def not_a_function():\n"
        "    pass\n"
        "'''\n"
        "# def neither(): pass\n"
        "t = 'a\\\n"
        "def nor_this(): pass'\n"
        "async def real(x: dict[str, list[int]] = {'a': [1]}) -> None:\n"
        "    await x\n",
        [("real", "function", 8, 9, None)],
    ),
    (
        "decorators, nested classes and functions, one-line bodies",
        "@decorator\n"
        "class Outer(Base, metaclass=Meta):\n"
        "    class Inner: pass\n"
        "\n"
        "    @property\n"
        "    def value(self): return self._v\n"
        "\n"
        "    def method(self):\n"
        "        def helper():\n"
        "            return 1\n"
        "        return helper()\n",
        [
            ("Outer", "class", 2, 11, None),
            ("Inner", "class", 3, 3, "Outer"),
            ("value", "method", 6, 6, "Outer"),
            ("method", "method", 8, 11, "Outer"),
            ("helper", "function", 9, 10, "method"),
        ],
    ),
    (
        "a string that ends on a line where code goes on",
        'def f():\n    return """a\nb""" + g(\n1)\n\ndef h():\n    pass\n',
        [("f", "function", 1, 4, None), ("h", "function", 6, 7, None)],
    ),
]


@pytest.mark.parametrize(("what", "source", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_the_scanner_finds_what_tree_sitter_finds(
    what: str, source: str, expected: list[Row]
) -> None:
    assert rows(source, "auto") == expected, what
    assert tree_sitter_rows(source) == expected, what
    symbols = extract(source, "python")
    assert symbols.engine == "regex"  # Python is scanned unless tree-sitter is asked for
    assert extract(source, "python", "tree-sitter").definitions == symbols.definitions


def test_code_being_typed_keeps_the_definitions_before_and_after_it() -> None:
    source = (
        "class A:\n"
        "    def f(self):\n"
        "        return g(1,\n"  # the call is not closed yet
        "    def h(self):\n"
        "        pass\n"
        "def after():\n"
        "    pass\n"
    )
    found = rows(source, "auto")
    assert [(name, line) for name, _, line, _, _ in found] == [
        ("A", 1),
        ("f", 2),
        ("h", 4),
        ("after", 6),
    ]
    assert found[3] == ("after", "function", 6, 7, None)  # wherever A is taken to end


def test_a_string_continued_after_a_backslash_is_no_code() -> None:
    source = "s = 'first \\\nsecond'\nvalue = s\n"
    assert identifier_counts(source, "python") == {"s": 2, "value": 1}
    found, code = pyscan.definitions("def f():\n    return 'a \\\ndef g(): b'\n")
    assert [(f.name, f.line, f.end_line) for f in found] == [("f", 1, 3)]
    assert code.count("\n") == 3  # lines stay where they were


STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLE = [
    "argparse.py",
    "dataclasses.py",
    "typing.py",
    "inspect.py",
    "tokenize.py",
    "textwrap.py",
    "email/_header_value_parser.py",
    "asyncio/base_events.py",
    "unittest/mock.py",
    "json/decoder.py",
    "collections/__init__.py",
    "concurrent/futures/process.py",
]


@pytest.mark.parametrize("name", SAMPLE)
def test_standard_library_modules_give_tree_sitter_s_definitions(name: str) -> None:
    path = STDLIB / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this interpreter's standard library")
    text = path.read_text(encoding="utf-8")
    scanned = extract(text, "python")
    assert len(scanned.definitions) > 10
    assert scanned.definitions == extract(text, "python", "tree-sitter").definitions
    assert tree_sitter_rows(text) == rows(text, "auto")


def test_an_index_built_by_a_pool_keeps_the_child_s_definitions_packed(tmp_path: Path) -> None:
    for n in range(12):
        unit = "class C{n}_{i}:\n    def m{i}(self):\n        return {i}\n"
        (tmp_path / f"mod{n}.py").write_text("".join(unit.format(n=n, i=i) for i in range(40)))
    with ProcessExtractor(workers=2, pool_bytes=1, threshold=1) as extractor:
        pooled = SymbolIndex(tmp_path, extractor=extractor)
        assert pooled.refresh() == 12
    plain = SymbolIndex(tmp_path)
    plain.refresh()
    assert all(is_packed(f.symbols.definitions) for f in pooled.files())  # nothing built yet
    hits = pooled.definitions("C3_7")  # the name table came from the child's names
    assert [(h.path, h.definition.line, h.definition.end_line) for h in hits] == [
        ("mod3.py", 22, 24)
    ]
    mod3 = pooled.file("mod3.py")
    assert mod3 is not None and isinstance(mod3.symbols.definitions, Definitions)
    assert mod3.symbols.definitions.packed is None  # read, so built
    others = [f for f in pooled.files() if f.path != "mod3.py"]
    assert len(others) == 11 and all(is_packed(f.symbols.definitions) for f in others)
    assert [(f.path, f.symbols) for f in pooled.files()] == [
        (f.path, f.symbols) for f in plain.files()
    ]
    assert pooled.definitions("m5") == plain.definitions("m5")
    # the counts' names come back interned, shared between files (one string per name)
    counts = [f.symbols.identifiers for f in pooled.files()]
    assert all(sys.intern(name) is name for found in counts for name in found)


def is_packed(definitions: object) -> bool:
    return isinstance(definitions, Definitions) and definitions.packed is not None


def test_texts_made_to_be_rescanned_still_give_every_definition() -> None:
    # brackets never closed, before thousands of lines at the margin: each is looked at once
    text = "def f():\n    x = g(\n" + "y = 1\n" * 20_000 + "def after():\n    pass\n"
    found, _ = pyscan.definitions(text)
    assert [(f.name, f.line, f.end_line) for f in found] == [
        ("f", 1, 20_002),
        ("after", 20_003, 20_004),
    ]
    # headers whose brackets never close: each is taken to be its first line
    found, _ = pyscan.definitions("".join(f"def f{n}(\n" for n in range(5_000)))
    assert [(f.line, f.end_line) for f in found] == [(n + 1, n + 1) for n in range(5_000)]
    # thousands of bodies nested in each other: the scans stop at their budget (a few times
    # the text), the later definitions end where they start, and every one is found
    depth = 4_000
    text = "".join(" " * n + f"def f{n}():\n" for n in range(depth))
    found, _ = pyscan.definitions(text)
    assert [f.line for f in found] == list(range(1, depth + 1))
    assert found[0].end_line == depth  # the first bodies were scanned to the end
    assert found[-1].end_line == depth
    assert any(f.end_line == f.line for f in found[: depth - 1])  # the budget ran out
