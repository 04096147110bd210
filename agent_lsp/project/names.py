"""Confident hallucinated edits: an edit that calls a name defined nowhere — not in the
edited file, not in the project (the symbol index), not a builtin — is flagged before it is
written; repeating the same call confirms it. Python here; JavaScript/TypeScript in
`names_js`, Go in `names_go`."""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from pathlib import Path

from agent_lsp.project.names_go import undefined_go
from agent_lsp.project.names_js import undefined_js
from agent_lsp.project.names_tree import Known

__all__ = ["Known", "bound_names", "flag_message", "undefined_names"]

CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


def bound_names(tree: ast.AST) -> set[str]:
    """Every name the module binds anywhere (defs, classes, assignments, imports, args)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def undefined_names(
    path: str, before: str, after: str, new_text: str, known: Known, root: Path | None = None
) -> list[str]:
    """Names `new_text` calls that the file did not mention before and nothing defines
    (`root`: the workspace, for a JS file's installed packages and a Go file's package)."""
    if path.endswith(_JS_SUFFIXES):
        return undefined_js(path, before, after, known, root)
    if path.endswith(".go"):
        return undefined_go(path, before, after, known, root)
    if not path.endswith(".py"):
        return []
    try:
        tree = ast.parse(after)
    except (SyntaxError, ValueError):
        return []
    if any(
        isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
        for n in ast.walk(tree)
    ):
        return []  # a star import may bring anything
    bound = bound_names(tree) | set(dir(builtins))
    old = set(re.findall(r"[A-Za-z_]\w*", before))
    found: list[str] = []
    for name in CALL.findall(new_text):
        if name in found or name in bound or name in old or keyword.iskeyword(name):
            continue
        if not known(name):
            found.append(name)
    return found


def flag_message(path: str, names: list[str]) -> str:
    shown = ", ".join(f"`{n}`" for n in names)
    if path.endswith(_JS_SUFFIXES):
        where = f"{path}, the symbol index, the JavaScript globals, the imported packages"
    elif path.endswith(".go"):
        where = f"{path}, the package's files, the symbol index, the Go builtins"
    else:
        where = f"{path}, the symbol index, the builtins"
    return (
        f"not written: {shown} defined nowhere in the project ({where}); if it is right "
        "(defined in another edit, from a package), repeat the same call to write it; "
        "otherwise correct the name"
    )
