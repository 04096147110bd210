"""Cheaply find the test files affected by a changed source file (import lines, package dir)."""

from __future__ import annotations

import configparser
import fnmatch
import os
import posixpath
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import cast

from adapters.workspaces import owning_package

__all__ = ["PytestRules", "is_test_file", "pytest_rules", "tests_for_source"]

_SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox"}
    | {"dist", "build", "coverage", ".next", ".nuxt", "vendor", ".agent-lsp", "site-packages"}
)
_JS_EXTS = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".vue", ".svelte")
_JS_TEST = re.compile(r"(?:\.(?:test|spec)\.[cm]?[jt]sx?$)|(?:^|/)__tests__/")
_JS_SPEC = re.compile(
    r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*|\bvi\.mock\s*\(\s*|\bjest\.mock\s*\(\s*)"""
    r"""['"](?P<spec>\.{1,2}/[^'"]*|\.{1,2})['"]"""
)
_PY_IMPORT = re.compile(
    r"^\s*(?:from\s+(?P<from>[\w.]+)\s+import\s+(?P<names>.+)|import\s+(?P<mods>.+))",
    re.MULTILINE,
)
_MAX_FILES = 20_000


def is_test_file(rel: str) -> bool:
    """Whether ``rel`` (a project-relative path) is a test file of a known runner."""
    name = PurePosixPath(rel).name
    if rel.endswith(".py"):
        return name.startswith("test_") or name.endswith("_test.py") or name == "tests.py"
    if rel.endswith("_test.go"):
        return True
    return rel.endswith(_JS_EXTS) and bool(_JS_TEST.search(rel))


@dataclass(frozen=True)
class PytestRules:
    """Which Python files pytest collects in a project: its ``testpaths`` (every folder when
    empty) and ``python_files`` patterns (pytest's defaults when not set)."""

    testpaths: tuple[str, ...] = ()
    python_files: tuple[str, ...] = ("test_*.py", "*_test.py")

    def collects(self, rel: str) -> bool:
        """Whether pytest, run without arguments, collects the file ``rel``."""
        name = PurePosixPath(rel).name
        if not any(fnmatch.fnmatch(name, pattern) for pattern in self.python_files):
            return False
        return not self.testpaths or any(
            rel == path or rel.startswith(path + "/") or fnmatch.fnmatch(rel, path + "/*")
            for path in self.testpaths
        )


def _ini_options(path: Path, section: str) -> dict[str, str] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(_read_head(path, 200_000))
    except configparser.Error:
        return None
    return dict(parser[section]) if parser.has_section(section) else None


def _toml_options(path: Path) -> dict[str, str] | None:
    try:
        data: dict[str, object] = tomllib.loads(_read_head(path, 500_000))
    except tomllib.TOMLDecodeError:
        return None
    table: object = data.get("tool")
    for key in ("pytest", "ini_options"):
        table = cast("dict[str, object]", table).get(key) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        return None
    out: dict[str, str] = {}
    for key, value in cast("dict[str, object]", table).items():
        words = cast("list[object]", value) if isinstance(value, list) else [value]
        out[key] = " ".join(str(w) for w in words)
    return out


def pytest_rules(root: Path) -> PytestRules:
    """The collection rules of the pytest configuration file pytest itself would use in
    ``root`` (pytest.ini, .pytest.ini, pyproject.toml, tox.ini, setup.cfg: the first that has
    a pytest section)."""
    for name, section in (
        ("pytest.ini", "pytest"),
        (".pytest.ini", "pytest"),
        ("pyproject.toml", ""),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        path = root / name
        if not path.is_file():
            continue
        options = _toml_options(path) if not section else _ini_options(path, section)
        if options is None:
            continue
        rules = PytestRules()
        testpaths = tuple(
            w.removeprefix("./").rstrip("/") for w in options.get("testpaths", "").split()
        )
        patterns = tuple(options.get("python_files", "").split())
        return PytestRules(testpaths or rules.testpaths, patterns or rules.python_files)
    return PytestRules()


def _nearest_first(found: list[str], changed: str) -> list[str]:
    """``found`` ordered by the folders between each file and ``changed`` (the tests beside
    a file first, those of far-away packages last), then by name."""
    where = PurePosixPath(changed).parent.parts

    def distance(rel: str) -> tuple[int, str]:
        parts = PurePosixPath(rel).parent.parts
        common = 0
        for a, b in zip(parts, where, strict=False):
            if a != b:
                break
            common += 1
        return len(parts) + len(where) - 2 * common, rel

    return sorted(found, key=distance)


def _walk(root: Path) -> Iterator[str]:
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        rel_folder = Path(folder).relative_to(root).as_posix()
        for name in files:
            count += 1
            if count > _MAX_FILES:
                return
            yield name if rel_folder == "." else f"{rel_folder}/{name}"


def _read_head(path: Path, limit: int = 64_000) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return ""


def _python_modules(rel: str) -> set[str]:
    """Dotted names a changed Python file may be imported as (with and without ``src/``)."""
    parts = list(PurePosixPath(rel).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    names = {".".join(parts[i:]) for i in range(len(parts)) if parts[i:]}
    return {n for n in names if n}


def _imports_python(text: str, modules: set[str], stem: str) -> bool:
    text = re.sub(r"\(([^)]*)\)", lambda m: m.group(0).replace("\n", " "), text)
    for match in _PY_IMPORT.finditer(text):
        if match["from"] is not None:
            base = match["from"].lstrip(".")
            if base in modules:
                return True
            names = {n.strip().split(" as ")[0] for n in match["names"].strip("()\\ ").split(",")}
            if stem in names and (not base or any(m.endswith(f"{base}.{stem}") for m in modules)):
                return True
        else:
            for item in match["mods"].split(","):
                if item.strip().split(" as ")[0].strip() in modules:
                    return True
    return False


def _reexported_by(root: Path, changed: str) -> set[str]:
    """Dotted names of the packages whose ``__init__.py`` imports ``changed`` (transitively up
    the folders), so ``import pkg`` in a test counts for a change of ``pkg/mod.py``."""
    names: set[str] = set()
    child = PurePosixPath(changed)
    if child.name == "__init__.py":
        child = child.parent
    while child.parent != PurePosixPath("."):
        package = child.parent
        init = _read_head(root / package / "__init__.py")
        name = child.stem if child.suffix == ".py" else child.name
        pattern = (
            rf"^\s*from\s+\.{re.escape(name)}\b|^\s*from\s+\.\s+import\s+.*\b{re.escape(name)}\b"
        )
        dotted = ".".join(package.parts)
        absolute = rf"^\s*(?:from|import)\s+{re.escape(dotted)}\.{re.escape(name)}\b"
        if not re.search(f"{pattern}|{absolute}", init, re.MULTILINE):
            break
        names |= _python_modules(f"{package.as_posix()}/__init__.py")
        child = package
    return names


def _js_resolves(test_rel: str, spec: str, changed_stem: str, changed: str) -> bool:
    target = posixpath.normpath(posixpath.join(posixpath.dirname(test_rel), spec))
    if target in (changed, changed_stem):
        return True
    return target + "/index" == changed_stem


def tests_for_source(root: Path, changed_file: str) -> list[str]:
    """Test files (relative to ``root``) that import ``changed_file``, found by scanning import
    lines (Python, JS/TS) or, for Go, the ``_test.go`` files of the same package folder.

    In a monorepo only the package that owns ``changed_file`` (its nearest enclosing package,
    :func:`adapters.workspaces.owning_package`) is scanned by its own names; the test files of
    the other packages count when they import it by a name that says where it is (a dotted
    name of two or more parts, a relative JS path leading to it, for Go the package's import
    path under its ``go.mod``). A changed test file yields itself.
    The scan is textual and bounded: dynamic imports and imports through re-exports are not
    followed, so the full suite remains the final check."""
    changed = PurePosixPath(changed_file.replace(os.sep, "/")).as_posix().removeprefix("./")
    if Path(changed).is_absolute():
        changed = Path(changed).relative_to(root).as_posix()
    package = owning_package(root, changed)
    if not package:
        found = _tests_in(root, changed)
    else:
        inner = _tests_in(root / package, changed[len(package) + 1 :])
        found = [f"{package}/{rel}" for rel in inner]
    found += [rel for rel in _importers_elsewhere(root, changed, package) if rel not in found]
    head = found[:1] if found and found[0] == changed else []
    return head + _nearest_first(found[len(head) :], changed)


tests_for_source.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def _is_test(rel: str, rules: PytestRules) -> bool:
    return rules.collects(rel) if rel.endswith(".py") else is_test_file(rel)


def _tests_in(root: Path, changed: str) -> list[str]:
    rules = pytest_rules(root)
    found: list[str] = [changed] if _is_test(changed, rules) else []
    if changed.endswith(".go"):
        folder = posixpath.dirname(changed)
        directory = root / folder if folder else root
        tests = sorted(p.name for p in directory.glob("*_test.go"))
        found += [posixpath.join(folder, name) if folder else name for name in tests]
    elif changed.endswith(".py"):
        modules = _python_modules(changed) | _reexported_by(root, changed)
        stem = PurePosixPath(changed).stem
        if stem == "__init__":
            stem = PurePosixPath(changed).parent.name
        found += [
            rel
            for rel in _walk(root)
            if rel.endswith(".py")
            and rules.collects(rel)
            and rel != changed
            and _imports_python(_read_head(root / rel), modules, stem)
        ]
    elif changed.endswith(_JS_EXTS):
        changed_stem = re.sub(r"\.[^./]+$", "", changed)
        for rel in _walk(root):
            if rel != changed and is_test_file(rel) and rel.endswith(_JS_EXTS):
                specs = (m["spec"] for m in _JS_SPEC.finditer(_read_head(root / rel)))
                if any(_js_resolves(rel, spec, changed_stem, changed) for spec in specs):
                    found.append(rel)
    head = found[:1] if found and found[0] == changed else []
    return head + sorted(set(found) - set(head))


_GO_MODULE = re.compile(r"^module\s+(\S+)", re.MULTILINE)


def _importers_elsewhere(root: Path, changed: str, package: str) -> list[str]:
    """Test files outside ``package`` (and, for Go, outside the changed file's folder) that
    import ``changed``: a monorepo's other packages, another Go package."""
    if changed.endswith(".go"):
        path = _go_import_path(root, changed)
        if path is None:
            return []
        quoted = re.compile(rf'"{re.escape(path)}"')
        folder = posixpath.dirname(changed)
        return sorted(
            rel
            for rel in _walk(root)
            if rel.endswith("_test.go")
            and posixpath.dirname(rel) != folder
            and quoted.search(_read_head(root / rel))
        )
    if not package:
        return []  # the scan of the whole project found them already
    rules = pytest_rules(root)
    outside = [
        rel for rel in _walk(root) if _is_test(rel, rules) and not rel.startswith(package + "/")
    ]
    if changed.endswith(".py"):
        inner = changed[len(package) + 1 :]
        names = _python_modules(inner) | _reexported_by(root / package, inner)
        modules = {name for name in names if "." in name}  # "util" alone names any package's
        stem = PurePosixPath(changed).stem
        if stem == "__init__":
            stem = PurePosixPath(changed).parent.name
        return [
            rel
            for rel in outside
            if rel.endswith(".py")
            and _imports_python(_ABSOLUTE_ONLY.sub("", _read_head(root / rel)), modules, stem)
        ]
    if changed.endswith(_JS_EXTS):
        changed_stem = re.sub(r"\.[^./]+$", "", changed)
        return [
            rel
            for rel in outside
            if rel.endswith(_JS_EXTS)
            and any(
                _js_resolves(rel, m["spec"], changed_stem, changed)
                for m in _JS_SPEC.finditer(_read_head(root / rel))
            )
        ]
    return []


_ABSOLUTE_ONLY = re.compile(r"^\s*from\s+\..*$", re.MULTILINE)  # relative imports stay home


def _go_import_path(root: Path, changed: str) -> str | None:
    """The import path of the Go package holding ``changed``: the nearest ``go.mod``'s module
    and the folder under it; None without one."""
    folder = PurePosixPath(changed).parent
    for base in (folder, *folder.parents):
        text = _read_head(root / base / "go.mod", 4_000)
        match = _GO_MODULE.search(text)
        if match:
            inner = folder.relative_to(base).as_posix()
            return match[1] if inner == "." else f"{match[1]}/{inner}"
    return None
