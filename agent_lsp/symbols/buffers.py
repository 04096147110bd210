"""Editor buffers in a `SymbolIndex`: the editor's text of a file is indexed in place of the
disk's (`update_file`) and wins over it, through every refresh, until the editor closes the file
(`close_file`: the disk's text is indexed again). `sync_buffers` makes the index match the open
buffers at once.
"""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path

from agent_lsp.symbols.entries import IndexedFile
from agent_lsp.symbols.extract import extract
from agent_lsp.symbols.model import FileSymbols, Language, language_for
from agent_lsp.symbols.refresh import Refreshing
from agent_lsp.symbols.worker import ProcessExtractor


class Buffered(Refreshing):
    def update_file(self, path: Path | str, text: str) -> bool:
        """Index the editor's text of `path` (it wins over the disk until `close_file`);
        False when the file is not indexable (outside the root, unknown language, too big)."""
        key = self.key(path)
        language = language_for(key) if key else None
        if key is None or language is None:
            return False
        if len(text) > self.max_file_bytes:
            self.close_file(path)
            return False
        current = self._files.get(key)
        if current is not None and current.buffer == text:
            return True
        entry = IndexedFile(key, -1, len(text), self._extract_buffer(key, text, language), text)
        with self._lock:
            self._put(key, entry)
        return True

    def _extract_buffer(self, key: str, text: str, language: Language) -> FileSymbols:
        """The buffer's symbols, by the file's path when the extractor takes one (a file
        parsed lately, from the disk or as a buffer, is then re-parsed incrementally)."""
        extractor, path = self.extractor, str(self.root / key)
        if extractor is extract:
            return extract(text, language, self.engine, key=path)
        if isinstance(extractor, ProcessExtractor):
            return extractor(text, language, self.engine, key=path)
        return extractor(text, language, self.engine)

    def close_file(self, path: Path | str) -> None:
        """The editor closed `path`: index the disk's text again (or forget a deleted file)."""
        key = self.key(path)
        if key is None:
            return
        with self._lock:
            current = self._files.get(key)
            if current is None or current.buffer is None:
                return
            self._drop(key)
        try:
            info = (self.root / key).stat()
        except OSError:
            return
        if stat.S_ISREG(info.st_mode) and info.st_size <= self.max_file_bytes:
            self._load_disk([(key, info.st_mtime_ns, info.st_size, info.st_ctime_ns, None, None)])

    def sync_buffers(self, buffers: Mapping[Path, str]) -> int:
        """Make the index match the open buffers: index changed ones, release closed ones."""
        changed = 0
        open_keys: set[str] = set()
        for path, text in buffers.items():
            key = self.key(path)
            if key is None:
                continue
            open_keys.add(key)
            current = self._files.get(key)
            if (current is None or current.buffer != text) and self.update_file(key, text):
                changed += 1
        with self._lock:
            buffered = [k for k, f in self._files.items() if f.buffer is not None]
        for key in buffered:
            if key not in open_keys:
                self.close_file(key)
                changed += 1
        return changed
