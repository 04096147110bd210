"""Hallucinated names in JavaScript/TypeScript edits: a called identifier (`foo()`,
`new Foo()`) that the file does not bind, that is no JS/Node/browser/test-framework global,
that the project does not define (the symbol index) and that no package the file imports from
mentions (its entry and type files in `node_modules`). Member calls (`x.foo()`), calls inside
template literals and anything in strings, comments or JSX text are never flagged."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from agent_lsp.project.names_globals import JS_GLOBALS
from agent_lsp.project.names_tree import Known, bound_names, inside, text, walk
from agent_lsp.symbols import ts_engine
from agent_lsp.symbols.model import language_for

if TYPE_CHECKING:
    import tree_sitter

_FIELDS = frozenset(
    {
        ("function_declaration", "name"),
        ("generator_function_declaration", "name"),
        ("function_expression", "name"),
        ("generator_function", "name"),
        ("class_declaration", "name"),
        ("abstract_class_declaration", "name"),
        ("class", "name"),
        ("enum_declaration", "name"),
        ("function_signature", "name"),
        ("internal_module", "name"),
        ("module", "name"),
        ("variable_declarator", "name"),
        ("arrow_function", "parameter"),
        ("catch_clause", "parameter"),
        ("for_in_statement", "left"),
        ("assignment_expression", "left"),
    }
)
_WHOLES = frozenset(
    {"formal_parameters", "import_clause", "import_require_clause", "namespace_import"}
)
_NEVER_IN = frozenset({"template_string", "ERROR"})
_CALLEE = {"call_expression": "function", "new_expression": "constructor"}
_REQUIRE = re.compile(r"""\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)""")
_MAX_READ = 2_000_000  # bytes of one package file searched for a name


def called(root: tree_sitter.Node) -> list[str]:
    """Identifiers in call position (in source order), outside template literals."""
    names: list[str] = []
    for node in walk(root):
        field = _CALLEE.get(node.type)
        callee = node.child_by_field_name(field) if field else None
        if callee is not None and callee.type == "identifier" and not inside(node, _NEVER_IN):
            names.append(text(callee))
    return names


def undefined_js(path: str, before: str, after: str, known: Known, root: Path | None) -> list[str]:
    """Names the edit calls that the file did not mention before and nothing defines."""
    language = language_for(path)
    if language not in ("javascript", "typescript", "tsx"):
        return []
    tree = ts_engine.parse(after, language)
    if tree is None or tree.has_error:
        return []  # no grammar, or a file that does not parse: never guess
    bound = bound_names(tree, _FIELDS, _WHOLES)
    old = set(re.findall(r"[A-Za-z_$][\w$]*", before))
    found: list[str] = []
    for name in called(tree):
        if name in found or name in bound or name in old or name in JS_GLOBALS:
            continue
        if not known(name):
            found.append(name)
    if found and root is not None:
        mentioned = _package_words(root, path, tree)
        found = [name for name in found if name not in mentioned]
    return found


def _package_words(root: Path, path: str, tree: tree_sitter.Node) -> set[str]:
    """The words of the entry and type files of the installed packages the file imports."""
    sources = {
        text(node)[1:-1]
        for node in walk(tree)
        if node.type == "string" and node.parent is not None and node.parent.type in _IMPORTS
    }
    sources |= set(_REQUIRE.findall(text(tree)))
    words: set[str] = set()
    for source in sources:
        if source.startswith((".", "/")) or ":" in source:
            continue  # a relative import is the project's own (the symbol index knows it)
        parts = source.split("/")
        package = "/".join(parts[:2] if source.startswith("@") else parts[:1])
        folder = _installed(root, PurePosixPath(path).parent, package)
        if folder is not None:
            for file in _entry_files(folder):
                words.update(re.findall(r"[A-Za-z_$][\w$]*", _read(file)))
    return words


_IMPORTS = frozenset({"import_statement", "export_statement"})


def _installed(root: Path, folder: PurePosixPath, package: str) -> Path | None:
    """`node_modules/<package>` nearest to the file, up to the workspace root."""
    here = root / folder
    while True:
        candidate = here / "node_modules" / package
        if candidate.is_dir():
            return candidate
        if here == root or here.parent == here:
            return None
        here = here.parent


def _entry_files(folder: Path) -> list[Path]:
    """The package's declared entry and type files, its index files."""
    files: list[Path] = []
    try:
        manifest = json.loads(_read(folder / "package.json") or "{}")
    except ValueError:
        manifest = {}
    if isinstance(manifest, dict):
        for key in ("types", "typings", "main", "module", "browser"):
            value = manifest.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(value, str):
                files.append(folder / value)
    files += [folder / f"index{suffix}" for suffix in (".d.ts", ".js", ".mjs", ".cjs")]
    return [file for file in files if file.is_file()]


def _read(file: Path) -> str:
    try:
        with file.open("rb") as handle:
            return handle.read(_MAX_READ).decode("utf-8", "replace")
    except OSError:
        return ""
