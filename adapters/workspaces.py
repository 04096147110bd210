"""The packages of a monorepo: what its workspace manifests declare (package.json
``workspaces``, ``pnpm-workspace.yaml``, ``go.work``, ``[tool.uv.workspace]``), else a bounded
search for project folders; and which package owns a file (the nearest enclosing one)."""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Layout", "owning_package", "pnpm_packages", "workspace_layout"]

PROJECT_MARKERS = (
    "package.json",
    "go.mod",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "pytest.ini",
    "tox.ini",
    "manage.py",
)
SKIP_DIRS = frozenset(
    {"node_modules", "venv", "env", "build", "dist", "target", "vendor", "site-packages"}
    | {"__pycache__", "tests", "test", "docs", "examples", "coverage", "testdata"}
)
SEARCH_DEPTH = 3  # folder levels below the root searched without a manifest
_GLOB_DEPTH = 8  # folder levels a manifest's ``**`` reaches
_MAX_DIRS = 5_000


@dataclass(frozen=True)
class Layout:
    """Package folders (relative, posix, sorted): ``declared`` maps those a manifest names to
    the kind it declares them as ("node", "go" or "python"); ``searched`` are the others."""

    declared: dict[str, str]
    searched: tuple[str, ...]

    @property
    def folders(self) -> list[str]:
        return sorted({*self.declared, *self.searched})


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def pnpm_packages(text: str) -> list[str]:
    """The ``packages:`` globs of a pnpm-workspace.yaml (block list or ``[a, b]`` flow list;
    comments and other keys ignored)."""
    globs: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = re.sub(r"\s+#.*$|^#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        if not line[0].isspace() and not line.startswith("-"):
            key, _, rest = line.partition(":")
            inside = key.strip() == "packages"
            rest = rest.strip()
            if inside and rest.startswith("["):
                globs += [_unquote(x) for x in rest.strip("[]").split(",") if x.strip()]
                inside = False
            continue
        item = line.strip()
        if inside and item.startswith("-"):
            globs.append(_unquote(item[1:]))
    return [g for g in globs if g]


def _json_globs(root: Path) -> list[str]:
    try:
        package = json.loads(_read(root / "package.json") or "null")
    except ValueError:
        return []
    spaces = package.get("workspaces") if isinstance(package, dict) else None
    if isinstance(spaces, dict):
        spaces = spaces.get("packages")  # pyright: ignore[reportUnknownMemberType]
    if not isinstance(spaces, list):
        return []
    return [s for s in spaces if isinstance(s, str)]  # pyright: ignore[reportUnknownVariableType]


def go_work_uses(text: str) -> list[str]:
    """The folders of a go.work's ``use`` directives (single and block form)."""
    text = re.sub(r"//.*", "", text)
    uses: list[str] = []
    for block in re.findall(r"^\s*use\s*\(([^)]*)\)", text, re.MULTILINE):
        uses += [_unquote(x) for x in block.split()]
    uses += [_unquote(m) for m in re.findall(r"^\s*use\s+([^\s(]+)\s*$", text, re.MULTILINE)]
    return uses


def _uv_members(root: Path) -> list[str]:
    try:
        data = tomllib.loads(_read(root / "pyproject.toml"))
    except tomllib.TOMLDecodeError:
        return []
    members = data.get("tool", {}).get("uv", {}).get("workspace", {}).get("members", [])
    return [m for m in members if isinstance(m, str)] if isinstance(members, list) else []


def _walk_dirs(root: Path, depth: int) -> list[str]:
    """Folders below ``root`` (relative, posix) up to ``depth`` levels, skipping dependency,
    build and hidden folders; bounded."""
    found: list[str] = []
    for folder, dirs, _files in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        level = 0 if rel == "." else rel.count("/") + 1
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        if level >= depth:
            dirs[:] = []
        if rel != ".":
            found.append(rel)
        if len(found) >= _MAX_DIRS:
            break
    return found


def _glob_match(rel: str, pattern: str) -> bool:
    parts, pats = rel.split("/"), [p for p in pattern.split("/") if p not in ("", ".")]

    def match(i: int, j: int) -> bool:
        if j == len(pats):
            return i == len(parts)
        if pats[j] == "**":
            return any(match(k, j + 1) for k in range(i, len(parts) + 1))
        return i < len(parts) and fnmatch.fnmatchcase(parts[i], pats[j]) and match(i + 1, j + 1)

    return match(0, 0)


def _expand(root: Path, globs: list[str], marker: str, dirs: list[str]) -> list[str]:
    include = [g.removeprefix("./").rstrip("/") for g in globs if not g.startswith("!")]
    exclude = [g[1:].removeprefix("./").rstrip("/") for g in globs if g.startswith("!")]
    return [
        d
        for d in dirs
        if any(_glob_match(d, g) for g in include)
        and not any(_glob_match(d, g) for g in exclude)
        and (root / d / marker).is_file()
    ]


def _has_marker(folder: Path) -> bool:
    return any((folder / m).is_file() for m in PROJECT_MARKERS)


def workspace_layout(root: Path) -> Layout:
    """The packages of ``root``: those its manifests declare, at any depth their globs say,
    plus the first-level project folders; without a manifest, the project folders found up
    to :data:`SEARCH_DEPTH` levels down."""
    node_globs = _json_globs(root) + pnpm_packages(_read(root / "pnpm-workspace.yaml"))
    go_uses = go_work_uses(_read(root / "go.work"))
    uv_globs = _uv_members(root)
    declared: dict[str, str] = {}
    if node_globs or uv_globs:
        dirs = _walk_dirs(root, _GLOB_DEPTH)
        declared |= dict.fromkeys(_expand(root, uv_globs, "pyproject.toml", dirs), "python")
        declared |= dict.fromkeys(_expand(root, node_globs, "package.json", dirs), "node")
    for use in go_uses:
        rel = posixpath.normpath(use.replace("\\", "/")).removeprefix("./")
        if rel not in ("", ".") and not rel.startswith("..") and (root / rel / "go.mod").is_file():
            declared[rel] = "go"
    manifest = bool(node_globs or go_uses or uv_globs)
    depth = 1 if manifest else SEARCH_DEPTH
    searched = tuple(
        d for d in _walk_dirs(root, depth) if d not in declared and _has_marker(root / d)
    )
    return Layout(declared, searched)


def owning_package(root: Path, rel: str, layout: Layout | None = None) -> str:
    """The package folder that owns ``rel`` (a project-relative path): the nearest enclosing
    package of the layout; "" for the project root."""
    rel = rel.replace("\\", "/").removeprefix("./").rstrip("/")
    folders = (layout or workspace_layout(root)).folders
    owners = [f for f in folders if rel == f or rel.startswith(f + "/")]
    return max(owners, key=len, default="")
