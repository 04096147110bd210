"""Edits written in words (agent_lsp/loop/words.py): the forms small models write them in."""

from __future__ import annotations

from agent_lsp.loop.words import attempted, edits_in_words

FILES = {
    "src/text.py": (
        "import re\n\n\n@cache\ndef slugify(s):\n    return re.sub('x', '-', s)\n\n\n"
        "def other():\n    return 1\n"
    ),
    "app.js": "function add(a, b) {\n  return a - b;\n}\n\nmodule.exports = { add };\n",
    "tests/test_text.py": "from text import slugify\n\n\ndef test_it():\n    assert slugify('A')\n",
}


def read(rel: str) -> str | None:
    return FILES.get(rel)


def test_a_search_replace_block_after_its_path_inside_a_fence() -> None:
    text = (
        "Fix:\n\nsrc/text.py\n```python\n<<<<<<< SEARCH\n    return re.sub('x', '-', s)\n"
        "=======\n    return re.sub('x', '-', s).lower()\n>>>>>>> REPLACE\n```\n"
    )
    found = edits_in_words(text, read)
    assert [(e.path, e.old, e.new, e.what) for e in found.edits] == [
        (
            "src/text.py",
            "    return re.sub('x', '-', s)",
            "    return re.sub('x', '-', s).lower()",
            "search/replace",
        )
    ]
    assert found.problems == []


def test_a_search_replace_block_without_a_path_is_a_problem_not_an_edit() -> None:
    text = "<<<<<<< SEARCH\nreturn a - b;\n=======\nreturn a + b;\n>>>>>>> REPLACE\n"
    found = edits_in_words(text, read)
    assert found.edits == []
    assert found.problems == ["a SEARCH/REPLACE block without its file's path on the line before"]


def test_a_whole_file_named_in_the_info_string() -> None:
    new = FILES["app.js"].replace("a - b", "a + b")
    found = edits_in_words(f"```javascript app.js\n{new}```\n", read)
    assert [(e.path, e.old, e.new, e.what) for e in found.edits] == [
        ("app.js", FILES["app.js"], new, "whole file")
    ]


def test_a_python_definition_replaces_the_one_of_its_name_decorators_kept() -> None:
    text = "In `src/text.py`:\n```python\ndef slugify(s):\n    return s.lower()\n```\n"
    found = edits_in_words(text, read)
    assert [(e.old, e.new) for e in found.edits] == [
        (
            "@cache\ndef slugify(s):\n    return re.sub('x', '-', s)",
            "def slugify(s):\n    return s.lower()",
        )
    ]


def test_an_unnamed_definition_lands_in_the_one_read_file_that_has_it() -> None:
    text = "```python\ndef other():\n    return 2\n```"
    found = edits_in_words(text, read, ["tests/test_text.py", "src/text.py"])
    assert [(e.path, e.new) for e in found.edits] == [("src/text.py", "def other():\n    return 2")]
    assert edits_in_words(text, read, []).edits == []  # read nothing: only code shown


def test_a_fenced_test_file_is_never_applied() -> None:
    text = "tests/test_text.py\n```python\ndef test_it():\n    assert True\n```\n"
    found = edits_in_words(text, read)
    assert found.edits == []
    assert found.problems == [
        "a code block for the test file tests/test_text.py (change tests with edit_file)"
    ]


def test_a_part_of_a_file_that_is_no_definition_is_a_problem() -> None:
    text = "src/text.py\n```python\nimport os\n```\n"
    found = edits_in_words(text, read)
    assert found.edits == []
    assert "neither the whole file" in found.problems[0]


def test_attempted_calls_are_recognised_in_their_usual_disguises() -> None:
    assert attempted('```json\n{"name": "edit_file", "arguments": {"path": "a"}}\n```')
    assert attempted("&lt;tool_call&gt;{&#34;name&#34;: &#34;x&#34;}")
    assert attempted("functions.run_tests:")
    assert not attempted("The tests pass now; I changed the divisor.")


def test_a_test_file_named_with_backslashes_is_still_a_test_file() -> None:
    files = {"proj/tests/test_text.py": "def test_it():\n    assert 0\n", **FILES}
    for path in ("tests\\test_text.py", "proj\\tests\\test_text.py"):
        found = edits_in_words(
            f"```python {path}\ndef test_it():\n    assert True\n```\n", files.get
        )
        assert found.edits == [], path
        assert "test file" in found.problems[0]


def test_a_block_written_as_a_merge_conflict_reads_as_search_replace() -> None:
    """A small model asked for SEARCH/REPLACE often writes a merge conflict instead (seen in
    the benchmark: `<<<<<<< HEAD` … `=======` … `>>>>>>> fix`): the same old text, new text."""
    text = (
        "app.js\n```\n<<<<<<< HEAD\n  return a - b;\n=======\n  return a + b;\n>>>>>>> fix\n```\n"
    )
    found = edits_in_words(text, read)
    assert [(e.path, e.old, e.new) for e in found.edits] == [
        ("app.js", "  return a - b;", "  return a + b;")
    ]
    assert found.problems == []


def test_a_path_written_in_other_letter_cases_is_the_read_file_it_names() -> None:
    """ "App.js" as the first word of a reply (a small model capitalises it; three replies of a
    benchmark run were lost so) is app.js, the file it has read; where two read files fold to
    the same name, the block names neither."""
    new = "function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n"
    found = edits_in_words(f"App.js\n```\n{new}```\n", read, ["tests/test_text.py", "app.js"])
    assert [(e.path, e.old, e.new, e.what) for e in found.edits] == [
        ("app.js", FILES["app.js"], new, "whole file")
    ]
    assert edits_in_words(f"App.js\n```\n{new}```\n", read).edits == []  # not read: no guess
    files = {**FILES, "APP.js": FILES["app.js"]}
    both = edits_in_words(f"App.js\n```\n{new}```\n", files.get, ["app.js", "APP.js"])
    assert both.edits == []
