"""Run unittest tests and write one JSON record per test (script for the project's Python).

Usage: ``python unittest_main.py OUT.json [NAME ...]``, run in the project folder. Without
names it discovers like ``python -m unittest`` (``test*.py`` from ``.``), then from ``tests/``
or ``test/`` when that finds nothing. Kept compatible with Python 3.8+ and stdlib only."""

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


class _Recorder(unittest.TextTestResult):
    records: list[dict[str, Any]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.records = []

    def _record(self, test: Any, outcome: str, err: Any = None, note: str = "") -> None:
        text = "".join(traceback.format_exception(*err)) if err else note
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        file, line = _where(test) if isinstance(test, unittest.TestCase) else (None, None)
        self.records.append(
            {
                "id": test.id(),
                "outcome": outcome,
                "file": file,
                "line": line,
                "message": lines[-1].strip() if lines else note,
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


def _count(suite: unittest.TestSuite) -> int:
    return suite.countTestCases()


def _load(names: list[str]) -> unittest.TestSuite:
    loader = unittest.TestLoader()
    if names:
        return loader.loadTestsFromNames(names)
    suite = loader.discover(".", pattern="test*.py", top_level_dir=".")
    if _count(suite) == 0:
        for folder in ("tests", "test"):
            if Path(folder).is_dir():
                found = loader.discover(folder, pattern="test*.py", top_level_dir=folder)
                if _count(found) > 0:
                    return found
    return suite


def main(argv: list[str]) -> int:
    out, names = argv[1], argv[2:]
    sys.path.insert(0, str(Path.cwd()))
    suite = _load(names)
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
