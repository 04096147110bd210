"""A file's symbols as the persisted index keeps them: packed bytes, unpacked on first use.

A warm start takes every file from the cache but a query reads only a few of them, so neither
the definitions nor the identifier counts are built when the cache is loaded: each stays the
`marshal`led bytes it was stored as until something reads it, and is written back unchanged by
the next save if nothing did. An unpacked value equals the one `extract` built (tests hold them
to it).
"""

from __future__ import annotations

import marshal
from collections.abc import Iterator, Mapping, Sequence
from sys import intern
from typing import cast, overload

from agent_lsp.symbols.model import Definition, Row, definitions_from_rows


def pack_definitions(definitions: Sequence[Definition]) -> bytes:
    if isinstance(definitions, Definitions) and definitions.packed is not None:
        return definitions.packed
    return marshal.dumps(
        tuple((d.name, d.kind, d.line, d.end_line, d.container, d.signature) for d in definitions)
    )


def defined_names(definitions: Sequence[Definition]) -> Sequence[str]:
    """The names `definitions` define, in order (packed ones stay packed when they know them)."""
    if isinstance(definitions, Definitions) and definitions.names is not None:
        return definitions.names
    return [d.name for d in definitions]


def pack_counts(identifiers: Mapping[str, int]) -> bytes:
    if isinstance(identifiers, Counts) and identifiers.packed is not None:
        return identifiers.packed
    return marshal.dumps(dict(identifiers))


def _loads(data: bytes, kind: type) -> object:
    try:
        loaded: object = marshal.loads(data)
    except Exception:  # cannot happen for an authenticated file written by `cache.save`
        return kind()
    return loaded if isinstance(loaded, kind) else kind()


class Definitions(Sequence[Definition]):
    """A file's definitions, built from their stored bytes on first use; `names` (the names
    they define, when known) answers the name table without building them."""

    __slots__ = ("_built", "names", "packed")

    def __init__(self, packed: bytes, names: tuple[str, ...] | None = None) -> None:
        self.packed: bytes | None = packed
        self.names = names
        self._built: tuple[Definition, ...] | None = None

    def unpacked(self) -> tuple[Definition, ...]:
        built = self._built
        if built is None:
            packed = self.packed
            if packed is None:  # another thread unpacked it meanwhile (built is set first)
                return cast(tuple[Definition, ...], self._built)
            try:
                built = definitions_from_rows(cast(tuple[Row, ...], _loads(packed, tuple)))
            except (TypeError, ValueError):  # a row of another shape: nothing to trust
                built = ()
            self._built = built
            self.packed = None
        return built

    @overload
    def __getitem__(self, index: int) -> Definition: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Definition]: ...
    def __getitem__(self, index: int | slice) -> Definition | Sequence[Definition]:
        return self.unpacked()[index]

    def __iter__(self) -> Iterator[Definition]:
        return iter(self.unpacked())

    def __len__(self) -> int:
        return len(self.unpacked())

    def __bool__(self) -> bool:
        return bool(self.unpacked())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Definitions):
            return self.unpacked() == other.unpacked()
        if isinstance(other, tuple):
            return self.unpacked() == other
        return NotImplemented

    __hash__ = None  # pyright: ignore[reportAssignmentType]

    def __repr__(self) -> str:
        return repr(self.unpacked())


class Counts(Mapping[str, int]):
    """A file's identifier counts, unpacked from their stored bytes on first use."""

    __slots__ = ("_counts", "packed")

    def __init__(self, packed: bytes) -> None:
        self.packed: bytes | None = packed
        self._counts: dict[str, int] | None = None

    def _unpacked(self) -> dict[str, int]:
        counts = self._counts
        if counts is None:
            packed = self.packed
            if packed is None:  # another thread unpacked it meanwhile (counts are set first)
                return cast(dict[str, int], self._counts)
            loaded = cast(dict[str, int], _loads(packed, dict))
            # names interned here (a worker leaves that to the receiver; `marshal` keeps it)
            counts = self._counts = dict(zip(map(intern, loaded), loaded.values(), strict=True))
            self.packed = None
        return counts

    def __getitem__(self, name: str) -> int:
        return self._unpacked()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._unpacked()

    def get(self, name: str, default: int = 0) -> int:  # pyright: ignore[reportIncompatibleMethodOverride]
        return self._unpacked().get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._unpacked())

    def __len__(self) -> int:
        return len(self._unpacked())

    def __repr__(self) -> str:
        return repr(self._unpacked())
