"""What the CLI prints is safe for a terminal: `shown(text)` escapes every control and
invisible character but newline and tab (`\\u001b`, `\\u0007`, `\\u202e` ...), so a string from
a repository or a model — a record's request, a log line, a memory note, a test's output, a
summary — is shown, never sent: no escape sequence writes the clipboard (OSC 52), erases a line,
moves the cursor or reorders text.

Every command's stdout and stderr go through it (`safe_streams`, around the whole CLI but the
language server's stdio); the harness's own sequences (a spinner's `\\r`, `\\x1b[K`) are written
with `control`, the only way around it."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Generator
from typing import TextIO, cast

__all__ = ["SafeStream", "control", "safe_streams", "shown"]

# Every control (Cc, but newline and tab), format (Cf: soft hyphen, bidi controls, zero-width
# characters, tags), surrogate (Cs) and line or paragraph separator (Zl, Zp) character, as
# Unicode 14 (Python 3.11's `unicodedata`) has them; tests/test_cli_terminal_safe.py checks the
# table against the running Python's `unicodedata`.
_ESCAPED = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891"
    "\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff"
    "\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def shown(text: str) -> str:
    """`text` with control, format (bidi, zero-width) and line-separator characters written as
    `\\uXXXX`; newlines and tabs kept. Escaping twice changes nothing more."""
    return _ESCAPED.sub(_escape, text)


class SafeStream(io.TextIOBase):
    """A text stream that writes `shown(text)` to `inner`."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(shown(s))
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:  # the real stream stays open: it is not ours
        with contextlib.suppress(OSError, ValueError):
            self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        return self.inner.encoding

    @property
    def errors(self) -> str | None:  # pyright: ignore[reportIncompatibleVariableOverride]
        return self.inner.errors

    @property
    def buffer(self) -> io.BufferedIOBase:
        return cast("io.BufferedIOBase", self.inner.buffer)


def control(stream: TextIO, sequence: str) -> None:
    """Write the harness's own terminal sequence (`\\r\\x1b[K`) as it is."""
    inner = stream.inner if isinstance(stream, SafeStream) else stream
    inner.write(sequence)
    inner.flush()


@contextlib.contextmanager
def safe_streams() -> Generator[None]:
    """stdout and stderr through `shown` while the block runs."""
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout = cast("TextIO", SafeStream(old_out))
    sys.stderr = cast("TextIO", SafeStream(old_err))
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdout, sys.stderr = old_out, old_err
