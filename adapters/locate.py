"""Find ``file:line`` locations of the project in tracebacks, stack traces and compiler output."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["frame_in", "innermost", "is_assertion", "js_location", "project_path", "relative_to"]

_FOREIGN_DIRS = frozenset(
    {".venv", "venv", ".tox", "site-packages", "dist-packages", "node_modules", ".pnpm"}
)
# ``path:12:`` at a line start (pytest short tracebacks, compilers) or ``File "path", line 12``.
_PY_LOCATION = re.compile(
    r'^(?P<p1>[^\s:<>"][^:\n]*?):(?P<l1>\d+):(?:[ \t]|$)|File "(?P<p2>[^"\n]+)", line (?P<l2>\d+)',
    re.MULTILINE,
)
# ``at fn (path:12:3)``, ``at path:12:3``, ``file:///path:12:3``, ``At file: path:12:3``,
# ``path:12:3 - error`` and babel's ``SyntaxError: path: Unexpected token (12:3)``.
_JS_FRAME = re.compile(
    r"(?:\(|\bat |\bfile: |^|\s)(?:file://)?(?P<path>(?:[A-Za-z]:)?[^\s():'\"]+\.[cm]?[jt]sx?|"
    r"(?:[A-Za-z]:)?[^\s():'\"]+\.(?:vue|svelte|mjs|cjs)):(?P<line>\d+)(?::\d+)?",
    re.MULTILINE,
)
_BABEL = re.compile(r"(?P<path>\S+\.[cm]?[jt]sx?): .*?\((?P<line>\d+):\d+\)")


def relative_to(path: Path, base: Path) -> str | None:
    """``path`` relative to ``base`` (also through ``base``'s resolved form), or None."""
    for root in (base, base.resolve()):
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    resolved = path.resolve()
    if resolved.is_relative_to(base.resolve()):
        return resolved.relative_to(base.resolve()).as_posix()
    return None


def project_path(path: str, run_root: Path) -> str | None:
    """``path`` relative to ``run_root`` if it names an existing file of the project itself."""
    candidate = Path(path)
    if candidate.is_absolute():
        rel = relative_to(candidate, run_root)
        if rel is None:
            return None
        candidate = Path(rel)
    norm = Path(os.path.normpath(candidate))
    if norm.parts[:1] == ("..",) or _FOREIGN_DIRS.intersection(norm.parts):
        return None
    return norm.as_posix() if (run_root / norm).is_file() else None


def innermost(text: str, run_root: Path) -> tuple[str, int] | None:
    """The last ``path:line`` of a Python traceback (or compiler output) inside the project."""
    found: tuple[str, int] | None = None
    for match in _PY_LOCATION.finditer(text):
        rel = project_path(match["p1"] or match["p2"], run_root)
        if rel is not None:
            found = (rel, int(match["l1"] or match["l2"]))
    return found


def frame_in(text: str, test_file: str, run_root: Path) -> tuple[str, int] | None:
    """The outermost ``path:line`` of a traceback inside ``test_file``: the test's own frame
    (pytest and unittest tracebacks start at the test function), not a shared helper's."""
    for match in _PY_LOCATION.finditer(text):
        if project_path(match["p1"] or match["p2"], run_root) == test_file:
            return test_file, int(match["l1"] or match["l2"])
    return None


_ASSERTIONS = frozenset({"AssertionError", "Failed", "AssertionFailedError"})


def is_assertion(exception: str) -> bool:
    """True for an assertion failure (``AssertionError``, ``pytest.fail``'s ``Failed``, their
    qualified names), which is located at the test's frame rather than where it was raised."""
    return exception.rpartition(".")[2] in _ASSERTIONS


def js_location(text: str, run_root: Path) -> tuple[str, int] | None:
    """The first stack frame (or error position) of a JS/TS error inside the project."""
    babel = _BABEL.search(text)
    if babel is not None:
        rel = project_path(babel["path"], run_root)
        if rel is not None:
            return rel, int(babel["line"])
    for match in _JS_FRAME.finditer(text):
        rel = project_path(match["path"], run_root)
        if rel is not None:
            return rel, int(match["line"])
    return None
