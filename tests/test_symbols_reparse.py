"""An incremental re-parse (a file's kept tree, edited) gives exactly the symbols a full parse of
the new text gives: functions added and removed, names changed, the syntax broken and mended,
several ranges changed at once, in every language; and a changed file on disk goes through it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agent_lsp.symbols import SymbolIndex, extract, incremental
from agent_lsp.symbols.model import Language
from agent_lsp.symbols.worker import ProcessExtractor

PYTHON = '''"""A module."""

import os


class Stack:
    """A stack."""

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()


def helper(x, y=(1, 2)):
    text = "a # not a comment"
    return os.path.join(x, text)


async def main():
    s = Stack()
    s.push(helper(1))
'''

# (description, old fragment, new fragment) applied one after the other
PYTHON_EDITS = [
    ("add a function", "async def main", "def added(z):\n    return z\n\n\nasync def main"),
    ("rename a method", "def pop(self)", "def pop_item(self)"),
    ("remove a function", "def added(z):\n    return z\n\n\n", ""),
    ("break the syntax", "def helper(x, y=(1, 2)):", "def helper(x, y=(1, 2:"),
    ("mend it", "def helper(x, y=(1, 2:", "def helper(x, y=(1, 2)):"),
    ("open a string", 'text = "a # not', 'text = """a # not'),
    ("close it", 'text = """a # not', 'text = "a # not'),
    (
        "nest a class",
        "    def pop_item",
        "    class Inner:\n        def deep(self):\n            pass\n\n    def pop_item",
    ),
    ("non-ascii name", "def helper", "def hélper"),
]
SOURCES: dict[Language, tuple[str, list[tuple[str, str]]]] = {
    "javascript": (
        "class Stack {\n  push(x) { this.items.push(x); }\n}\n"
        "function helper(a) {\n  return a;\n}\nconst f = (x) => x;\n",
        [
            ("function helper", "function renamed"),
            ("const f = (x) => x;", "const f = (x) => { x;"),
            ("const f = (x) => { x;", "const f = (x) => x;\nfunction* gen() {}"),
        ],
    ),
    "typescript": (
        "interface Shape {\n  area(): number;\n}\n"
        "export class Square implements Shape {\n  area(): number { return 1; }\n}\n"
        "type Id = string;\n",
        [
            ("type Id = string;", "type Id = string;\nenum Color { Red }"),
            ("interface Shape", "interface Figure"),
            ("area(): number { return 1; }", "area(): number { return 1; "),
        ],
    ),
    "go": (
        "package main\n\ntype Stack struct {\n\titems []int\n}\n\n"
        "func (s *Stack) Push(x int) {\n\ts.items = append(s.items, x)\n}\n\n"
        "func main() {}\n",
        [
            ("func main() {}", "func main() {}\n\ntype Shape interface {\n\tArea() int\n}\n"),
            ("Push(x int)", "Add(x int)"),
            ("type Stack struct {", "type Stack struct"),
        ],
    ),
}


@pytest.fixture(autouse=True)
def _no_kept_trees() -> None:
    incremental.forget()


def _check(key: str, text: str, language: Language) -> None:
    assert extract(text, language, key=key) == extract(text, language), text


def test_each_python_edit_gives_the_symbols_of_a_full_parse() -> None:
    text = PYTHON
    _check("mod.py", text, "python")
    for what, old, new in PYTHON_EDITS:
        assert old in text, what
        text = text.replace(old, new, 1)
        _check("mod.py", text, "python")
    names = {d.name for d in extract(text, "python", key="mod.py").definitions}
    assert {"pop_item", "Inner", "deep", "hélper"} <= names and "added" not in names


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_each_edit_in_other_languages_gives_the_symbols_of_a_full_parse(
    language: Language,
) -> None:
    text, edits = SOURCES[language]
    _check("file", text, language)
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
        _check("file", text, language)


def test_several_ranges_changed_at_once_and_random_edits_match_a_full_parse() -> None:
    text = PYTHON * 6
    _check("big.py", text, "python")
    # two far-apart changes in one step: the edit spans everything between them
    text = text.replace("def push", "def put", 1)
    text = (
        text[: text.rfind("def helper")] + "def last_helper" + text[text.rfind("def helper") + 10 :]
    )
    _check("big.py", text, "python")
    chunks = ["def f(a):\n", "class K:\n", "    ", "(", ")", ":", "\n", '"', "x = 1\n", "#"]
    rng = random.Random(20)
    for _ in range(40):
        start = rng.randrange(len(text))
        end = min(len(text), start + rng.randrange(12))
        text = text[:start] + rng.choice(chunks) + text[end:]
        _check("big.py", text, "python")


def test_a_file_changed_on_disk_is_re_parsed_from_its_kept_tree_and_matches_a_fresh_build(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    module = project / "mod.py"
    module.write_text(PYTHON)
    (project / "other.py").write_text("def other():\n    pass\n")
    index = SymbolIndex(project, engine="tree-sitter")  # Python is scanned by default
    index.refresh()
    key = str(module)
    for what, old, new in PYTHON_EDITS[:4]:
        module.write_text(module.read_text().replace(old, new, 1))
        assert index.refresh_paths([module]) == 1, what
        assert (key, "python") in incremental.kept(), "the file's tree is kept for the next change"
        rebuilt = SymbolIndex(project, engine="tree-sitter")
        rebuilt.refresh()
        assert [(f.path, f.symbols) for f in index.files()] == [
            (f.path, f.symbols) for f in rebuilt.files()
        ], what
    assert [h.definition.name for h in index.definitions("pop_item")] == ["pop_item"]


@pytest.mark.parametrize("through", ["in-process", "child"])
def test_editor_buffers_are_re_parsed_by_path_and_match_a_full_parse(
    tmp_path: Path, through: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mod.py").write_text(PYTHON)
    with ProcessExtractor(threshold=0 if through == "child" else 1 << 30) as extractor:
        index = SymbolIndex(project, extractor=extractor, engine="tree-sitter")
        index.refresh()
        text = PYTHON
        for what, old, new in PYTHON_EDITS:
            text = text.replace(old, new, 1)
            assert index.update_file("mod.py", text), what
            (buffered,) = [f.symbols for f in index.files() if f.path == "mod.py"]
            assert buffered == extract(text, "python", "tree-sitter"), what
    if through == "in-process":
        assert (str(project / "mod.py"), "python") in incremental.kept()
