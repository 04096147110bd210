"""Hallucinated names in Go edits: a called identifier that no file of the package (all `.go`
files of the directory) declares, that is no builtin and that the symbol index does not know;
and `pkg.Func()` where `pkg` is a package of this module whose files declare no `Func`.
Struct literals, method values, strings and comments are never calls."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from agent_lsp.project.names_globals import GO_BUILTINS
from agent_lsp.project.names_tree import Known, bound_names, text, walk
from agent_lsp.symbols import ts_engine

if TYPE_CHECKING:
    import tree_sitter

_FIELDS = frozenset(
    {
        ("function_declaration", "name"),
        ("method_declaration", "name"),
        ("type_spec", "name"),
        ("type_alias", "name"),
        ("var_spec", "name"),
        ("const_spec", "name"),
        ("parameter_declaration", "name"),
        ("variadic_parameter_declaration", "name"),
        ("type_parameter_declaration", "name"),
        ("short_var_declaration", "left"),
        ("range_clause", "left"),
        ("receive_statement", "left"),
        ("labeled_statement", "label"),
        ("import_spec", "name"),
    }
)
_MODULE = re.compile(r"^module\s+(\S+)", re.MULTILINE)
_MAX_FILES = 200  # files of one package parsed for its declarations


def undefined_go(path: str, before: str, after: str, known: Known, root: Path | None) -> list[str]:
    """Names the edit calls that the file did not mention before and nothing declares."""
    if not path.endswith(".go"):
        return []
    tree = ts_engine.parse(after, "go")
    if tree is None or tree.has_error:
        return []
    imports = _imports(tree)
    if "." in imports:
        return []  # a dot import may bring anything
    old = set(re.findall(r"[A-Za-z_]\w*", before))
    folder = PurePosixPath(path).parent
    local: set[str] | None = None  # parsed only when a call is new to the file
    package: set[str] | None = None
    packages: dict[str, set[str] | None] = {}
    found: list[str] = []
    for operand, name in _calls(tree):
        label = f"{operand}.{name}" if operand else name
        if label in found or name in old or (operand and (root is None or operand not in imports)):
            continue
        if not operand and name in GO_BUILTINS:
            continue
        if local is None:
            local = bound_names(tree, _FIELDS, frozenset())
        if operand and root is not None and operand not in local:
            target = imports[operand]
            if target not in packages:
                packages[target] = _project_package(root, folder, target)
            declared = packages[target]
            if declared is not None and name not in declared:
                found.append(label)
        elif not operand and name not in local and not known(name):
            if package is None:
                package = _package_names(root, folder, path) if root is not None else set()
            if name not in package:
                found.append(label)
    return found


def _calls(tree: tree_sitter.Node) -> list[tuple[str, str]]:
    """(operand, name) of `name(...)` (operand "") and `operand.Name(...)`, in order."""
    calls: list[tuple[str, str]] = []
    for node in walk(tree):
        if node.type != "call_expression":
            continue
        callee = node.child_by_field_name("function")
        if callee is None:
            continue
        if callee.type == "identifier":
            calls.append(("", text(callee)))
        elif callee.type == "selector_expression":
            operand = callee.child_by_field_name("operand")
            field = callee.child_by_field_name("field")
            if operand is not None and field is not None and operand.type == "identifier":
                calls.append((text(operand), text(field)))
    return calls


def _imports(tree: tree_sitter.Node) -> dict[str, str]:
    """The file's imports: the name it uses (alias, or the path's last element) -> path; a
    dot import is the key "."."""
    found: dict[str, str] = {}
    for node in walk(tree):
        if node.type != "import_spec":
            continue
        where = node.child_by_field_name("path")
        alias = node.child_by_field_name("name")
        if where is None:
            continue
        target = text(where).strip('"`')
        found[text(alias) if alias is not None else target.rsplit("/", 1)[-1]] = target
    return found


def _declared(folder: Path, skip: Path | None = None) -> set[str] | None:
    """Every name the `.go` files of `folder` declare (None: no Go files there)."""
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".go" and p != skip)
    except OSError:
        return None
    names: set[str] = set()
    for file in files[:_MAX_FILES]:
        try:
            source = file.read_text("utf-8", "replace")
        except OSError:
            continue
        tree = ts_engine.parse(source, "go")
        if tree is not None:
            names |= bound_names(tree, _FIELDS, frozenset())
    return names if files or skip is not None else None


def _package_names(root: Path, folder: PurePosixPath, path: str) -> set[str]:
    return _declared(root / folder, skip=root / path) or set()


def _project_package(root: Path, folder: PurePosixPath, target: str) -> set[str] | None:
    """The names declared by the package at import path `target` if it is in this module."""
    here = root / folder
    while True:
        mod = here / "go.mod"
        if mod.is_file():
            try:
                match = _MODULE.search(mod.read_text("utf-8", "replace"))
            except OSError:
                return None
            if match is None or not target.startswith(match.group(1) + "/"):
                return None
            sub = target[len(match.group(1)) + 1 :]
            return _declared(here / sub) if (here / sub).is_dir() else None
        if here == root or here.parent == here:
            return None
        here = here.parent
