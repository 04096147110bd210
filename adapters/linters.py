"""Linters and compilers as a source of diagnostics: ruff (or pyflakes), go vet, tsc.

Each runs on the run root (a shadow copy with the editor's text) and reports issues with a file
relative to it, a 1-based line and column, a code and a message. A linter that is not installed
is simply not run."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adapters.shell import Shell

__all__ = ["LintIssue", "available_linters", "parse_go_vet", "parse_tsc", "run_linters"]


@dataclass(frozen=True)
class LintIssue:
    source: str  # ruff, pyflakes, go vet, tsc
    file: str
    line: int
    column: int
    code: str | None
    message: str
    severity: str = "warning"


_Parser = Callable[[str, Path], list["LintIssue"]]


def available_linters(root: Path) -> list[str]:
    """The linters that apply to this project and can run here."""
    found: list[str] = []
    if any(root.glob("*.py")) or any(root.glob("*/*.py")):
        if shutil.which("ruff"):
            found.append("ruff")
        else:
            found.append("pyflakes")
    if (root / "go.mod").is_file() and shutil.which("go"):
        found.append("go vet")
    if (root / "tsconfig.json").is_file() and (root / "node_modules/.bin/tsc").exists():
        found.append("tsc")
    return found


async def run_linters(
    project_root: Path,
    run_root: Path,
    *,
    shell: Shell,
    timeout: float,  # noqa: ASYNC109
) -> list[LintIssue]:
    issues: list[LintIssue] = []
    for name in available_linters(project_root):
        argv, parse = _COMMANDS[name](run_root)
        result = await shell.run(argv, cwd=run_root, timeout=timeout)
        if result.timed_out or result.exit_code in (126, 127):
            continue
        issues.extend(parse(result.output, run_root))
    return issues


def _ruff(run_root: Path) -> tuple[list[str], _Parser]:
    ruff = shutil.which("ruff") or "ruff"
    argv = [ruff, "check", "--output-format", "json", "--no-cache", "--exit-zero", "."]
    return argv, parse_ruff


def _pyflakes(run_root: Path) -> tuple[list[str], _Parser]:
    return [sys.executable, "-m", "pyflakes", "."], parse_pyflakes


def _go_vet(run_root: Path) -> tuple[list[str], _Parser]:
    return ["go", "vet", "./..."], parse_go_vet


def _tsc(run_root: Path) -> tuple[list[str], _Parser]:
    return [str(run_root / "node_modules/.bin/tsc"), "--noEmit", "--pretty", "false"], parse_tsc


def parse_ruff(output: str, run_root: Path) -> list[LintIssue]:
    start = output.find("[")
    try:
        rows = json.loads(output[start:]) if start >= 0 else []
    except json.JSONDecodeError:
        return []
    issues: list[LintIssue] = []
    for row in rows if isinstance(rows, list) else []:
        location = row.get("location") or {}
        issues.append(
            LintIssue(
                "ruff",
                _relative(str(row.get("filename", "")), run_root),
                int(location.get("row", 1)),
                int(location.get("column", 1)),
                row.get("code"),
                str(row.get("message", "")),
            )
        )
    return issues


_LINE_COL = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):?)?\s*(?P<msg>.+)$")
_TSC = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning) "
    r"(?P<code>TS\d+): (?P<msg>.+)$"
)


def parse_pyflakes(output: str, run_root: Path) -> list[LintIssue]:
    return _by_line_col("pyflakes", output, run_root)


def parse_go_vet(output: str, run_root: Path) -> list[LintIssue]:
    return _by_line_col("go vet", output, run_root)


def parse_tsc(output: str, run_root: Path) -> list[LintIssue]:
    issues: list[LintIssue] = []
    for row in output.splitlines():
        if match := _TSC.match(row.strip()):
            issues.append(
                LintIssue(
                    "tsc",
                    _relative(match["file"], run_root),
                    int(match["line"]),
                    int(match["col"]),
                    match["code"],
                    match["msg"],
                    "error" if match["sev"] == "error" else "warning",
                )
            )
    return issues


def _by_line_col(source: str, output: str, run_root: Path) -> list[LintIssue]:
    issues: list[LintIssue] = []
    for row in output.splitlines():
        match = _LINE_COL.match(row.strip().removeprefix("vet: "))
        if match is None or row.startswith("#"):
            continue
        file = _relative(match["file"], run_root)
        if not (run_root / file).is_file():
            continue
        issues.append(
            LintIssue(source, file, int(match["line"]), int(match["col"] or 1), None, match["msg"])
        )
    return issues


def _relative(name: str, run_root: Path) -> str:
    path = Path(name)
    if path.is_absolute():
        try:
            return path.resolve().relative_to(run_root.resolve()).as_posix()
        except ValueError:
            return name
    return path.as_posix().removeprefix("./")


_COMMANDS: dict[str, Callable[[Path], tuple[list[str], _Parser]]] = {
    "ruff": _ruff,
    "pyflakes": _pyflakes,
    "go vet": _go_vet,
    "tsc": _tsc,
}
