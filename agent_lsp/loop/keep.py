"""A whole Python file written back by a small model often leaves out a method it did not
mean to change (asked to add `peek()`, it writes the class back without `__len__`): the
tests then fail for a reason the model cannot see. Unless the task asks to remove or rename
something, a method of a class the file had, missing from the class in the new text, is put
back where it was (after the method it followed), and the edit says so."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from agent_lsp.loop.words import WordsEdit

# Task words that may mean a definition is meant to go.
_REMOVAL = re.compile(
    r"\b(?:remov\w*|delet\w*|drop\w*|renam\w*|get rid|replac\w*|merg\w*|inlin\w*)", re.I
)


def may_drop(task_words: str) -> bool:
    """The task may ask for a definition to go (then nothing is put back)."""
    return _REMOVAL.search(task_words) is not None


def _methods(node: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """Its lines [start, end), 0-based, decorators included."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    return start, node.end_lineno or node.lineno


def kept_methods(old: str, new: str) -> tuple[str, list[str]]:
    """`new` with the methods of `old`'s classes that it left out put back, and their names
    ("Class.method"); `new` as it is when either text does not parse or nothing is missing."""
    try:
        before, after = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return new, []
    old_lines, new_lines = old.splitlines(), new.splitlines()
    inserts: dict[int, list[str]] = {}  # line index in new -> the lines to put there
    names: list[str] = []
    kept = _classes(after)
    for cls_name, cls in _classes(before).items():
        now = kept.get(cls_name)
        if now is None or not _methods(now):
            continue
        present = {m.name: m for m in _methods(now)}
        previous: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        for method in _methods(cls):
            if method.name in present:
                previous = present[method.name]
                continue
            start, end = _span(method)
            if previous is not None:  # after the method it followed
                inserts.setdefault(_span(previous)[1], []).extend(["", *old_lines[start:end]])
            else:  # before the first method the class still has
                at = _span(_methods(now)[0])[0]
                inserts.setdefault(at, []).extend([*old_lines[start:end], ""])
            names.append(f"{cls_name}.{method.name}")
    if not inserts:
        return new, []
    for at in sorted(inserts, reverse=True):
        new_lines[at:at] = inserts[at]
    merged = "\n".join(new_lines) + ("\n" if new.endswith("\n") else "")
    try:
        ast.parse(merged)
    except SyntaxError:
        return new, []
    return merged, names


def keep_left_out(edit: WordsEdit) -> WordsEdit:
    """A whole-file edit of a Python file with the methods it left out put back (said in its
    `what`)."""
    if edit.what != "whole file" or not edit.path.endswith(".py"):
        return edit
    merged, names = kept_methods(edit.old, edit.new)
    if not names:
        return edit
    said = ", ".join(names)
    return replace(edit, new=merged, what=f"whole file; kept {said}, which your text left out")
