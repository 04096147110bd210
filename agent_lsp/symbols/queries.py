"""What a `SymbolIndex` answers: the files indexed, the definitions of a name, where it occurs
(counts per file, or the lines themselves, read now from the editor's text or the disk), the
identifier totals, and defined names close to a misspelt one.

Every answer is computed from immutable per-file snapshots taken under the lock, so a refresh
running in another thread never blocks a query for long.
"""

from __future__ import annotations

import difflib
from collections import Counter
from pathlib import Path

from agent_lsp.fileio import read_disk_text
from agent_lsp.symbols.entries import IndexedFile, Reference, SymbolHit
from agent_lsp.symbols.lexical import reference_lines
from agent_lsp.symbols.table import FileTable

REFERENCE_TEXT_MAX = 200


class Queries(FileTable):
    def files(self) -> list[IndexedFile]:
        """A snapshot of every indexed file, by path."""
        with self._lock:
            return sorted(self._files.values(), key=lambda f: f.path)

    def file(self, path: Path | str) -> IndexedFile | None:
        key = self.key(path)
        return None if key is None else self._files.get(key)

    def definitions(self, name: str) -> list[SymbolHit]:
        """Definitions of `name`; `Container.name` keeps those inside that class or type."""
        container, _, bare = name.rpartition(".")
        with self._lock:
            found = (self._files.get(k) for k in self._names().get(bare, ()))
            entries = [entry for entry in found if entry is not None]
        hits = [
            SymbolHit(entry.path, d)
            for entry in entries
            for d in entry.symbols.definitions
            if d.name == bare and (not container or d.container == container)
        ]
        return sorted(hits, key=lambda h: (h.path, h.definition.line))

    def occurrences(self, name: str) -> dict[str, int]:
        """Per file, how often `name` occurs as an identifier (definitions included)."""
        bare = name.rpartition(".")[2]
        with self._lock:
            entries = list(self._files.values())
        found = [(e.path, e.symbols.identifiers.get(bare, 0)) for e in entries]
        return dict(sorted(item for item in found if item[1]))

    def references(
        self, name: str, limit: int = 50, *, skip_definitions: bool = True
    ) -> list[Reference]:
        """Lines where `name` occurs as an identifier (by path, then line), read from the
        editor's text or the disk now; definition lines of `name` are left out by default."""
        bare = name.rpartition(".")[2]
        with self._lock:
            entries = sorted(
                (e for e in self._files.values() if bare in e.symbols.identifiers),
                key=lambda e: e.path,
            )
        skip = (
            {(h.path, h.definition.line) for h in self.definitions(bare)}
            if skip_definitions
            else set[tuple[str, int]]()
        )
        found: list[Reference] = []
        for entry in entries:
            text = entry.buffer
            if text is None:
                try:
                    text = read_disk_text(self.root / entry.path)
                except OSError:
                    continue
            lines = text.split("\n")
            for line in reference_lines(text, entry.symbols.language, bare):
                if (entry.path, line) in skip:
                    continue
                text_at = lines[line - 1].strip()[:REFERENCE_TEXT_MAX]
                found.append(Reference(entry.path, line, text_at))
                if len(found) >= limit:
                    return found
        return found

    def totals(self) -> Counter[str]:
        """Identifier occurrences summed over all files (cached until the index changes)."""
        cached = self._totals
        if cached is not None and cached[0] == self._generation:
            return cached[1]
        generation = self._generation
        totals: Counter[str] = Counter()
        for entry in self.files():
            totals.update(entry.symbols.identifiers)
        self._totals = (generation, totals)
        return totals

    def names_like(self, name: str, limit: int = 5) -> list[str]:
        """Defined names close to `name`, ignoring case (for "did you mean")."""
        bare = name.rpartition(".")[2]
        with self._lock:
            names = list(self._names())
        folded: dict[str, list[str]] = {}
        for candidate in sorted(names):
            folded.setdefault(candidate.casefold(), []).append(candidate)
        close = difflib.get_close_matches(bare.casefold(), folded, n=limit, cutoff=0.75)
        found = [n for key in close for n in folded[key] if n != bare]
        return found[:limit]
