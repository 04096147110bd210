"""`release_heap`, run when a task ends: a finished task's garbage cycles are collected then."""

from __future__ import annotations

import gc
import weakref

from agent_lsp.lsp.heap import release_heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_a_cycle_left_behind_is_freed_and_nothing_is_raised() -> None:
    gc.disable()  # no automatic collection between the drop and the release
    try:
        first, second = Node(), Node()
        first.other, second.other = second, first
        gone = weakref.ref(first)
        del first, second
        assert gone() is not None  # a cycle: the reference counts alone do not free it
        release_heap()
        assert gone() is None
    finally:
        gc.enable()
