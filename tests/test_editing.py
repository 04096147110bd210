"""`agent_lsp.project.editing.find_edit`: exact matches first, then tolerant ones that say so."""

from __future__ import annotations

from agent_lsp.project.editing import EditFailure, EditMatch, FailureKind, MatchKind, find_edit

CODE = (
    "class Store:\n"
    "    def get(self, key):\n"
    "        value = self.data[key]\n"
    "        return value\n"
    "\n"
    "    def put(self, key, value):\n"
    "        self.data[key] = value\n"
    "        self.dirty = True\n"
)
OLD = "    def put(self, key, value):\n        self.data[key] = value\n"
NEW = "    def put(self, key, value):\n        self.check(key)\n        self.data[key] = value\n"
EDITED = CODE.replace(OLD, NEW)


def applied(text: str, old: str, new: str) -> EditMatch:
    result = find_edit(text, old, new, "store.py")
    assert isinstance(result, EditMatch), result
    assert not result.already_applied, result
    return result


def failed(text: str, old: str, new: str) -> EditFailure:
    result = find_edit(text, old, new, "store.py")
    assert isinstance(result, EditFailure), result
    return result


def assert_already_applied(text: str, old: str, new: str) -> EditMatch:
    again = find_edit(text, old, new, "store.py")
    assert isinstance(again, EditMatch) and again.already_applied, again
    assert again.text == text
    return again


def shifted(text: str, by: int) -> str:
    return "".join(
        line if not line.strip() else (" " * by + line if by > 0 else line[-by:])
        for line in text.splitlines(keepends=True)
    )


def test_exact_match_is_applied_as_is_and_twice_is_no_change() -> None:
    result = applied(CODE, OLD, NEW)
    assert (result.text, result.kind, result.note) == (EDITED, MatchKind.EXACT, "")
    assert (result.start_line, result.end_line, result.new_end_line) == (6, 7, 8)
    again = assert_already_applied(result.text, OLD, NEW)
    assert again.note == "new_text is at lines 6-8"


def test_exact_old_text_inside_the_applied_new_text_is_no_change() -> None:
    text = "LIMIT = 10\n"
    assert applied("LIMIT = 1\n", "LIMIT = 1", "LIMIT = 10").text == text
    assert_already_applied(text, "LIMIT = 1", "LIMIT = 10")


def test_several_exact_occurrences_are_an_error_with_their_lines() -> None:
    failure = failed(CODE, "self.data[key]", "self.store[key]")
    assert failure.kind is FailureKind.AMBIGUOUS
    assert failure.message == (
        "old_text occurs 2 times in store.py (lines 3, 7); include more surrounding lines so "
        "it is unique"
    )
    assert failure.candidates == ((3, 3), (7, 7))


def test_crlf_file_and_lf_old_text_keep_the_file_crlf() -> None:
    crlf = CODE.replace("\n", "\r\n")
    result = applied(crlf, OLD, NEW)
    assert result.text == EDITED.replace("\n", "\r\n")
    assert result.kind is MatchKind.LINE_ENDINGS
    assert result.note == "old_text matched with line endings converted to CRLF at lines 6-7"
    assert_already_applied(result.text, OLD, NEW)


def test_lf_file_and_crlf_old_text() -> None:
    result = applied(CODE, OLD.replace("\n", "\r\n"), NEW.replace("\n", "\r\n"))
    assert result.text == EDITED
    assert "line endings converted to LF" in result.note


def test_mixed_line_endings_match_as_whole_lines() -> None:
    mixed = CODE.replace("value):\n", "value):\r\n")  # one CRLF line in an LF file
    result = applied(mixed, OLD, NEW)
    assert result.kind is MatchKind.TRAILING_WHITESPACE
    assert result.text == EDITED
    assert result.note == "old_text matched ignoring line endings at lines 6-7"


def test_tabs_file_with_spaces_old_text_gets_tabs() -> None:
    tabs = CODE.replace("        ", "\t\t").replace("    ", "\t")
    result = applied(tabs, OLD, NEW)
    assert result.text == EDITED.replace("        ", "\t\t").replace("    ", "\t")
    assert result.kind is MatchKind.INDENTATION
    assert result.note == (
        "old_text matched with indentation adjusted to tabs at lines 6-7; "
        "new_text re-indented to match"
    )
    assert_already_applied(result.text, OLD, NEW)


def test_old_text_indented_deeper_than_the_file() -> None:
    result = applied(CODE, shifted(OLD, 4), shifted(NEW, 4))
    assert result.text == EDITED
    assert result.note == (
        "old_text matched with indentation adjusted by -4 columns at lines 6-7; "
        "new_text re-indented to match"
    )
    assert_already_applied(result.text, shifted(OLD, 4), shifted(NEW, 4))


def test_old_text_indented_less_than_the_file() -> None:
    old = "def put(self, key, value):\n    self.data[key] = value"
    new = "def put(self, key, value):\n    if key:\n        self.data[key] = value"
    result = applied(CODE, old, new)
    assert result.text == CODE.replace(
        "        self.data[key] = value\n        self.dirty",
        "        if key:\n            self.data[key] = value\n        self.dirty",
    )
    assert "indentation adjusted by +4 columns" in result.note
    assert_already_applied(result.text, old, new)


def test_an_indented_line_found_inside_a_deeper_indentation_is_a_drift() -> None:
    old = "    self.dirty = True"
    new = "    self.dirty = True\n    self.version += 1"
    result = applied(CODE, old, new)
    assert result.text == CODE + "        self.version += 1\n"
    assert result.kind is MatchKind.INDENTATION
    assert_already_applied(result.text, old, new)


def test_the_same_lines_at_two_indentations_are_ambiguous() -> None:
    text = "def a():\n    x = 1\n    y = 2\n\n\nclass B:\n    def c(self):\n"
    text += "        x = 1\n        y = 2\n"
    failure = failed(text, "  x = 1\n  y = 2\n", "  x = 1\n  y = 3\n")
    assert failure.kind is FailureKind.AMBIGUOUS
    assert failure.candidates == ((2, 3), (8, 9))
    assert "it matches 2 places (lines 2-3, lines 8-9)" in failure.message


def test_trailing_whitespace_in_the_file_is_ignored_and_kept_on_lines_not_changed() -> None:
    text = CODE.replace("    def put(self, key, value):\n", "    def put(self, key, value):  \n")
    result = applied(text, OLD, NEW)
    assert result.text == EDITED.replace(
        "value):\n        self.check", "value):  \n        self.check"
    )
    assert result.note == "old_text matched ignoring trailing whitespace at lines 6-7"
    assert_already_applied(result.text, OLD, NEW)


def test_trailing_whitespace_only_in_old_text_is_dropped_from_new_text() -> None:
    old = OLD.replace("\n", " \n")
    result = applied(CODE, old, NEW.replace("\n", " \n"))
    assert result.text == EDITED
    assert result.kind is MatchKind.TRAILING_WHITESPACE


def test_one_stale_line_matches_and_keeps_the_files_real_line() -> None:
    body = "    acc = 0\n    for item in items:\n        acc += item.price"
    text = f"def total(items):\n    count = len(items)\n{body}\n    return acc\n"
    old = f"    count = len(item)\n{body}\n"  # the model remembers `len(item)`
    new = f"    count = len(item)\n{body} * item.qty\n"
    result = applied(text, old, new)
    assert result.kind is MatchKind.CLOSE
    assert result.text == text.replace("item.price\n", "item.price * item.qty\n")
    assert result.note.startswith("old_text matched a close text (")
    assert "the file's line 2 is `count = len(items)`) at lines 2-5" in result.note
    assert_already_applied(result.text, old, new)


def test_lines_appended_after_a_stale_copy_are_not_appended_twice() -> None:
    old = "    def put(self, key, val):\n        self.data[key] = value\n"  # `val` is stale
    new = old + "        self.count += 1\n"
    result = applied(CODE, old, new)
    added = "        self.data[key] = value\n        self.count += 1\n"
    assert result.text == CODE.replace("        self.data[key] = value\n", added)
    assert "the file's line 6 is `def put(self, key, value):`" in result.note
    assert_already_applied(result.text, old, new)


def test_a_stale_line_and_an_indentation_drift_together() -> None:
    text = "class A:\n    def f(self):\n        a = 1\n        b = 2\n        c = 3\n"
    old = "def f(self):\n    a = 1\n    b = 22\n    c = 3\n"
    new = "def f(self):\n    a = 1\n    b = 22\n    c = 4\n"
    result = applied(text, old, new)
    assert result.text == text.replace("c = 3", "c = 4")
    assert "indentation adjusted by +4 columns" in result.note


def test_two_close_places_are_an_error_listing_both() -> None:
    block = "def {0}(x):\n    y = x * 2\n    z = y + 1\n    return z\n"
    text = block.format("f") + "\n\n" + block.format("g").replace("y + 1", "y + 2")
    old = "def h(x):\n    y = x * 2\n    z = y + 1\n    return z\n"
    failure = failed(text, old, old.replace("return z", "return -z"))
    assert failure.kind is FailureKind.AMBIGUOUS
    assert failure.candidates == ((1, 4), (7, 10))
    assert "2 places are close to it, so none was chosen" in failure.message
    assert "lines 1-4 (" in failure.message and "lines 7-10 (" in failure.message
    assert "7| def g(x):" in failure.message
    assert text == block.format("f") + "\n\n" + block.format("g").replace("y + 1", "y + 2")


def test_a_single_wrong_line_is_never_matched_approximately() -> None:
    failure = failed(CODE, "        retrun value", "        return value or None")
    assert failure.kind is FailureKind.NOT_FOUND
    assert failure.message.startswith("old_text not found in store.py. The closest text (")
    assert "4|         return value" in failure.message


def test_two_stale_lines_of_four_are_not_close_enough() -> None:
    old = "    def put(self, k, v):\n        self.data[k] = v\n        self.dirty = True\n"
    failure = failed(CODE, old, old + "        self.count += 1\n")
    assert failure.kind is FailureKind.NOT_FOUND
    assert "is at lines 6-8:\n6|     def put(self, key, value):" in failure.message


def test_blank_lines_at_the_edges_of_old_text_are_ignored() -> None:
    old = "\n\n" + shifted(OLD, 2) + "\n"
    new = "\n\n" + shifted(NEW, 2) + "\n"
    assert applied(CODE, old, new).text == EDITED


def test_deleting_the_last_lines_leaves_no_blank_line() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    result = applied(text, "b = 2  \nc = 3", "")
    assert result.text == "a = 1\n"


def test_empty_old_text_is_an_error() -> None:
    assert failed(CODE, "  \n", "x").kind is FailureKind.EMPTY


def test_new_text_found_once_where_old_text_is_gone_is_no_change() -> None:
    assert assert_already_applied(EDITED, "self.gone()", "self.check(key)").note == (
        "new_text is at line 7"
    )
