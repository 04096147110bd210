"""Edits the editor applied to files it had not opened to the server (kept light: the server's
didOpen/didChange/didClose handlers use it before the agent is loaded)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path

from agent_lsp.lsp.convert import resolved_path


@dataclass
class Held:
    text: str
    stamp: tuple[int, int] | None  # the file on disk when the edit was made (mtime, size)
    opened: bool = False  # the editor has sent didOpen since (with text before the edit)


def stamp_of(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return (status.st_mtime_ns, status.st_size)


class HeldBuffers:
    """Edits the editor applied to files it had not opened to the server: it holds them in a
    buffer, unsaved. The agent (its reads, the test runs) sees that text until the editor tells
    the server about the file (didChange, didClose, a didOpen with that text), or the file on
    disk changes (saved, or changed by something else)."""

    def __init__(self) -> None:
        self._held: dict[Path, Held] = {}

    def hold(self, path: Path, text: str, stamp: tuple[int, int] | None) -> None:
        self._held[path] = Held(text, stamp)

    def texts(self) -> dict[Path, str]:
        for path, held in list(self._held.items()):
            if stamp_of(path) != held.stamp:
                del self._held[path]
        return {path: held.text for path, held in self._held.items()}

    def get(self, path: Path) -> Held | None:
        self.texts()
        return self._held.get(path)

    def opened(self, uri: str, text: str) -> None:
        """didOpen: with the edited text the editor's buffer is the truth from now on; with
        other text (Neovim opens the file, then applies the edit) the edit's didChange comes."""
        path = resolved_path(uri)
        held = self._held.get(path) if path is not None else None
        if held is None or path is None:
            return
        if held.text == text:
            del self._held[path]
        else:
            held.opened = True

    def changed(self, uri: str) -> None:
        """didChange or didClose: the editor reports the file itself."""
        path = resolved_path(uri)
        if path is not None:
            self._held.pop(path, None)


_HELD: weakref.WeakKeyDictionary[object, HeldBuffers] = weakref.WeakKeyDictionary()


def held_buffers(server: object) -> HeldBuffers:
    """The server's edited-but-unopened buffers (shared by every task's channel)."""
    held = _HELD.get(server)
    if held is None:
        held = _HELD[server] = HeldBuffers()
    return held
