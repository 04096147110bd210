"""Re-parsing a file that changed a little: tree-sitter's incremental parse.

The syntax trees of the last `KEEP` files parsed by name (a disk file's path, see
`extract.extract(..., key=...)`) are kept with the bytes they were parsed from. When the same
file is parsed again, the one range where the old and new bytes differ (their common prefix and
suffix cut off) is applied to the old tree with `Tree.edit`, and the parser reuses every node
outside it: a one-line change of a 2,600-line file parses in about a millisecond instead of ten.
The tree then is the one a full parse of the new text gives, so the definitions are too (tests
hold them to it, edit by edit).

Each thread has its own parser (`ts_engine`); a kept tree is taken out of the table while it is
used, so two threads never touch the same tree.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from agent_lsp.symbols import ts_engine
from agent_lsp.symbols.model import Found, Language

if TYPE_CHECKING:
    import tree_sitter

KEEP = 8  # trees kept (the files changed last)
KEEP_BYTES = 1 << 20  # files bigger than this are not kept

_lock = threading.Lock()
_kept: OrderedDict[tuple[str, Language], tuple[bytes, tree_sitter.Tree]] = OrderedDict()


def common_prefix(old: bytes, new: bytes) -> int:
    """How many leading bytes `old` and `new` share (a binary search of memcmp slices)."""
    low, high = 0, min(len(old), len(new))
    if old[:high] == new[:high]:
        return high
    a, b = memoryview(old), memoryview(new)
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix(old: bytes, new: bytes, limit: int) -> int:
    """How many trailing bytes they share, at most `limit`."""
    low, high = 0, limit
    a, b = memoryview(old), memoryview(new)
    size_a, size_b = len(old), len(new)
    while low < high:
        middle = (low + high + 1) // 2
        if a[size_a - middle : size_a - low] == b[size_b - middle : size_b - low]:
            low = middle
        else:
            high = middle - 1
    return low


def _point(data: bytes, offset: int) -> tuple[int, int]:
    """(row, byte column) of `offset`."""
    return data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1)


def edit(tree: tree_sitter.Tree, old: bytes, new: bytes) -> None:
    """Tell `tree` (parsed from `old`) that its text is now `new`: one edit, the range between
    their common prefix and suffix."""
    start = common_prefix(old, new)
    if start == len(old) == len(new):
        return
    suffix = common_suffix(old, new, min(len(old), len(new)) - start)
    old_end, new_end = len(old) - suffix, len(new) - suffix
    tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=_point(new, start),
        old_end_point=_point(old, old_end),
        new_end_point=_point(new, new_end),
    )


def definitions(key: str, text: str, language: Language) -> list[Found]:
    """`ts_engine.definitions(text, language)`, re-using the tree kept for `key` if any."""
    data = text.encode("utf-8", "replace")
    with _lock:
        kept = _kept.pop((key, language), None)
    old = None
    if kept is not None:
        old_data, old = kept
        edit(old, old_data, data)
    found, tree = ts_engine.definitions_in(data, language, old)
    if len(data) <= KEEP_BYTES:
        with _lock:
            _kept[(key, language)] = (data, tree)
            while len(_kept) > KEEP:
                _kept.popitem(last=False)
    return found


def forget() -> None:
    """Drop every kept tree (for tests, and to give the memory back)."""
    with _lock:
        _kept.clear()


def kept() -> list[tuple[str, Language]]:
    """The (key, language) of the trees kept, the latest last."""
    with _lock:
        return list(_kept)
