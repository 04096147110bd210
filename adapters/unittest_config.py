"""Where a unittest suite's tests live, as the project declares it: ``python -m unittest
discover -s tests -t .`` in tox.ini, setup.cfg, a Makefile or CI, or pytest's ``testpaths``."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DiscoveryRoot", "discovery_root"]

_COMMAND_FILES = ("tox.ini", "setup.cfg", "Makefile", "noxfile.py", "pyproject.toml")
_DISCOVER = re.compile(r"-m\s+unittest\s+discover\b(?P<args>[^\n;&|`]*)")
_WORD = re.compile(r"[\w.*/\\-]+")
_TESTPATHS = re.compile(r"^testpaths\s*=\s*(?P<paths>.+(?:\n[ \t]+.+)*)", re.MULTILINE)
_INI_FILES = ("pytest.ini", "tox.ini", "setup.cfg")


@dataclass(frozen=True)
class DiscoveryRoot:
    """``discover -s start -t top -p pattern`` and where it was declared."""

    start: str
    top: str | None
    pattern: str | None
    source: str

    def argv(self) -> list[str]:
        """Options for ``unittest_main.py``."""
        args = ["--start", self.start]
        if self.top is not None:
            args += ["--top", self.top]
        if self.pattern is not None:
            args += ["--pattern", self.pattern]
        return args


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


def _parse_discover(args: str) -> tuple[str, str | None, str | None] | None:
    try:
        words = shlex.split(args)
    except ValueError:  # a command inside a TOML or YAML string
        words = shlex.split(re.sub(r"[\"'\],]", " ", args))
    named: dict[str, str] = {}
    positional: list[str] = []
    items = iter(words)
    for word in items:
        key, eq, value = word.partition("=")
        if key in ("-s", "--start-directory", "-t", "--top-level-directory", "-p", "--pattern"):
            named[key.lstrip("-")[:1]] = (value if eq else next(items, "")).strip("\"',]")
        elif len(word) > 2 and word[:2] in ("-s", "-t", "-p") and not word.startswith("--"):
            named[word[1]] = word[2:]
        elif not word.startswith("-") and _WORD.fullmatch(word):
            positional.append(word)
    start = named.get("s") or (positional[0] if positional else ".")
    pattern = named.get("p") or (positional[1] if len(positional) > 1 else None)
    top = named.get("t") or (positional[2] if len(positional) > 2 else None)
    return start, top, pattern


def _testpaths(root: Path) -> tuple[str, str] | None:
    try:
        data = tomllib.loads(_read(root / "pyproject.toml"))
    except tomllib.TOMLDecodeError:
        data = {}
    tool = data.get("tool")
    pytest_table = tool.get("pytest") if isinstance(tool, dict) else None
    options = pytest_table.get("ini_options") if isinstance(pytest_table, dict) else None
    paths = options.get("testpaths") if isinstance(options, dict) else None
    if isinstance(paths, list) and paths and isinstance(paths[0], str):
        return paths[0], "pyproject.toml [tool.pytest.ini_options] testpaths"
    for name in _INI_FILES:
        match = _TESTPATHS.search(_read(root / name))
        if match and match["paths"].split():
            return match["paths"].split()[0], f"{name} testpaths"
    return None


def _clean(folder: str) -> str:
    folder = folder.strip().removeprefix("./").rstrip("/")
    return folder or "."


def discovery_root(root: Path) -> DiscoveryRoot | None:
    """The declared discovery root of ``root`` (a folder that exists), or None."""
    files = [root / name for name in _COMMAND_FILES]
    workflows = root / ".github" / "workflows"
    if workflows.is_dir():
        files += sorted(workflows.glob("*.y*ml"))
    for path in files:
        for match in _DISCOVER.finditer(_read(path)):
            parsed = _parse_discover(match["args"])
            if parsed is None or not (root / parsed[0]).is_dir():
                continue
            start, top, pattern = parsed
            source = path.relative_to(root).as_posix()
            return DiscoveryRoot(_clean(start), top and _clean(top), pattern, source)
    found = _testpaths(root)
    if found is not None and (root / found[0]).is_dir() and _clean(found[0]) != ".":
        return DiscoveryRoot(_clean(found[0]), ".", None, found[1])
    return None
