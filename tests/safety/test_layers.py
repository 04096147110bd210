"""The safety modules import one way (no cycle, no import inside a function to dodge one),
and each module says what it holds."""

from __future__ import annotations

import ast
from pathlib import Path

import agent_lsp.safety

PACKAGE = Path(agent_lsp.safety.__file__).parent
CLASSIFIER = (
    *("classify", "programs", "fileprogs", "textprogs", "gitcmd", "runners", "wrappers"),
    *("shellparse", "shellwords", "shellexpand", "options", "builder", "grammar", "readers"),
    *("readspecs", "search", "danger", "builtins", "archives", "sedscript", "gitopts"),
    *("gitconfig", "gitmutate", "projects", "projectspecs", "packages", "shellstate"),
)


def imports(module: str) -> tuple[set[str], set[str]]:
    """(safety modules imported at the top, safety modules imported inside functions)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    top: set[str] = set()
    nested: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agent_lsp.safety."):
            name = (node.module or "").split(".")[2]
            (top if node.col_offset == 0 else nested).add(name)
    return top, nested


def test_the_classifier_modules_import_without_cycles() -> None:
    graph = {m: imports(m)[0] for m in CLASSIFIER}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for dep in graph.get(module, set()):
            visit(dep, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())
    assert all(not imports(m)[1] for m in CLASSIFIER), {m: imports(m)[1] for m in CLASSIFIER}


def test_each_module_is_small_and_documented() -> None:
    for module in CLASSIFIER:
        text = (PACKAGE / f"{module}.py").read_text()
        assert ast.get_docstring(ast.parse(text)), module
        assert len(text.splitlines()) <= 360, module
