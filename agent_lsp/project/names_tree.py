"""Syntax-tree helpers for the hallucinated-name checks of JavaScript/TypeScript and Go: the
names a file binds (by the grammar fields that declare them) and the identifiers it calls."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tree_sitter

Known = Callable[[str], bool]  # whether the project defines a name (the symbol index)

# the kinds of node that name something a declaration binds
NAME_KINDS = frozenset(
    {"identifier", "shorthand_property_identifier_pattern", "type_identifier"}
    | {"package_identifier", "field_identifier", "label_name"}
)


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every node under `node` (itself first), depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def names_under(node: tree_sitter.Node, into: set[str]) -> None:
    """Every name in `node`'s subtree (a pattern, a parameter list): over-collecting a default
    value's names only makes the check miss, never flag wrongly."""
    into.update(text(n) for n in walk(node) if n.type in NAME_KINDS)


def bound_names(
    root: tree_sitter.Node, fields: frozenset[tuple[str, str]], wholes: frozenset[str]
) -> set[str]:
    """The names bound in `root`: under the (node type, field) pairs of `fields` and in whole
    nodes of the types in `wholes` (parameter lists, import clauses)."""
    names: set[str] = set()
    for node in walk(root):
        if node.type in wholes:
            names_under(node, names)
            continue
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if field is not None and (node.type, field) in fields:
                names_under(child, names)
    return names


def inside(node: tree_sitter.Node, kinds: frozenset[str]) -> bool:
    """Whether an ancestor of `node` is of one of `kinds`."""
    parent = node.parent
    while parent is not None:
        if parent.type in kinds:
            return True
        parent = parent.parent
    return False
