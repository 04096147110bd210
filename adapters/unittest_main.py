"""Run unittest tests and write one JSON record per test (script for the project's Python).

Usage: ``python unittest_main.py OUT.json [--start DIR] [--top DIR] [--pattern P] [TARGET ...]``,
run in the project folder. Without targets it discovers like ``python -m unittest discover -s
DIR -t DIR -p P`` (the project's declared test root); without ``--start`` from ``.``, then from
``tests/`` or ``test/`` when that finds nothing. A target is a folder (discovered under it), a
file, ``file::Class::method`` or a dotted name. Kept compatible with Python 3.8+, stdlib only."""

from __future__ import annotations

import inspect
import json
import sys
import traceback
import unittest
from pathlib import Path
from typing import Any


def _where(test: unittest.TestCase) -> tuple[str | None, int | None]:
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    try:
        target = method if method is not None else type(test)
        file = inspect.getsourcefile(target)  # pyright: ignore[reportArgumentType]
        line = inspect.getsourcelines(target)[1]  # pyright: ignore[reportArgumentType]
    except (TypeError, OSError):
        return None, None
    return file, line


_DIFF_LINES = 40
_DIFF_CHARS = 3000


def _message(err: Any) -> str:
    """The exception's first line (``AssertionError: 4 != 5``), then its diff, bounded."""
    text = "".join(traceback.format_exception_only(err[0], err[1])).strip()
    lines = [ln.rstrip() for ln in text.splitlines()]
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"[... {len(lines) - _DIFF_LINES} more lines]"]
    message = "\n".join(lines)
    return message if len(message) <= _DIFF_CHARS else message[:_DIFF_CHARS] + " [...]"


def _module_file(test: Any) -> str | None:
    if _failed_load(test) or not isinstance(test, unittest.TestCase):
        return None
    module = sys.modules.get(type(test).__module__)
    return getattr(module, "__file__", None)


def _test_line(test: Any, tb: Any) -> int | None:
    """The line of the test method's own frame in the traceback (where it called a helper)."""
    method = getattr(test, getattr(test, "_testMethodName", ""), None)
    code = getattr(getattr(method, "__func__", method), "__code__", None)
    found = None
    while tb is not None:
        if code is not None and tb.tb_frame.f_code is code:
            found = tb.tb_lineno
        tb = tb.tb_next
    return found


class _Recorder(unittest.TextTestResult):
    records: list[dict[str, Any]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.records = []

    def _record(self, test: Any, outcome: str, err: Any = None, note: str = "") -> None:
        text = "".join(traceback.format_exception(*err)) if err else note
        case = getattr(test, "test_case", test)  # a subtest's own test case
        file, line = _where(case) if isinstance(case, unittest.TestCase) else (None, None)
        assertion = bool(err) and issubclass(err[0], (AssertionError, case.failureException))
        self.records.append(
            {
                "id": test.id(),
                "module_file": _module_file(case),
                "name": f"{type(case).__qualname__}.{getattr(case, '_testMethodName', '')}",
                "outcome": outcome,
                "file": file,
                "line": line,
                "test_line": _test_line(case, err[2]) if err else None,
                "assertion": assertion,
                "message": _message(err) if err else note,
                "traceback": text,
            }
        )

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._record(test, "failed", err)

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._record(test, "error", err)

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._record(test, "skipped", note=reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._record(test, "skipped", note="expected failure")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "failed", note="unexpected success")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            outcome = "failed" if issubclass(err[0], test.failureException) else "error"
            self._record(subtest, outcome, err)


def _tests(suite: Any) -> list[Any]:
    if isinstance(suite, unittest.TestSuite):
        return [t for child in suite for t in _tests(child)]
    return [suite]


def _within(path: str, top: str) -> bool:
    here = Path(path).resolve()
    return here == Path(top).resolve() or Path(top).resolve() in here.parents


def _package_top(start: str) -> str:
    """The folder above ``start``'s outermost enclosing package (``start`` if not a package)."""
    here = Path(start)
    while (here / "__init__.py").is_file() and here.resolve() != Path.cwd().resolve():
        here = here.parent
    return str(here)


def _discover(start: str, pattern: str, top: str | None) -> unittest.TestSuite:
    top = top if top is not None and _within(start, top) else _package_top(start)
    if top != start and not (Path(start) / "__init__.py").is_file():
        top = start  # unittest cannot import a non-package folder below the top level
    return unittest.TestLoader().discover(start, pattern=pattern, top_level_dir=top)


def _load_target(target: str, pattern: str, top: str | None) -> list[Any]:
    path, _, rest = target.partition("::")
    if Path(path).is_dir():
        return _tests(_discover(path, pattern, top))
    if not (path.endswith(".py") and Path(path).is_file()):
        return _tests(unittest.TestLoader().loadTestsFromName(target))
    found = _tests(_discover(str(Path(path).parent), Path(path).name, top))
    if not rest:
        return found
    wanted = "." + ".".join(rest.split("::"))
    return [
        t
        for t in found
        if t.id().endswith(wanted) or (wanted + ".") in t.id() + "." or _failed_load(t)
    ]


def _failed_load(test: Any) -> bool:
    return type(test).__name__ == "_FailedTest"


def _load(targets: list[str], start: str | None, top: str | None, pattern: str) -> Any:
    if targets:
        return unittest.TestSuite(
            [t for target in targets for t in _load_target(target, pattern, top)]
        )
    if start is not None:
        return _discover(start, pattern, top)
    suite = unittest.TestLoader().discover(".", pattern=pattern, top_level_dir=".")
    if suite.countTestCases() == 0:
        for folder in ("tests", "test"):
            if Path(folder).is_dir():
                found = _discover(folder, pattern, folder)
                if found.countTestCases() > 0:
                    return found
    return suite


def _options(args: list[str]) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    rest: list[str] = []
    items = iter(args)
    for arg in items:
        if arg in ("--start", "--top", "--pattern"):
            options[arg[2:]] = next(items, "")
        else:
            rest.append(arg)
    return options, rest


def main(argv: list[str]) -> int:
    out = argv[1]
    options, targets = _options(argv[2:])
    sys.path.insert(0, str(Path.cwd()))
    pattern = options.get("pattern") or "test*.py"
    suite = _load(targets, options.get("start"), options.get("top"), pattern)
    runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=1, resultclass=_Recorder)
    result = runner.run(suite)
    records = result.records if isinstance(result, _Recorder) else []
    with open(out, "w", encoding="utf-8") as handle:  # noqa: PTH123
        json.dump({"ran": result.testsRun, "tests": records}, handle)
    if result.testsRun == 0:
        return 5
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
