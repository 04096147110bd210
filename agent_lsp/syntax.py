"""Cheap syntax checks run after an edit, so a broken file is refused before it lands."""

from __future__ import annotations

from pathlib import Path


def syntax_error(path: Path, text: str) -> str | None:
    """A one-line description of the first syntax error, or None (also for unknown languages)."""
    if path.suffix in {".py", ".pyi"}:
        try:
            compile(text, str(path), "exec", dont_inherit=True)
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}"
        except ValueError as exc:  # e.g. null bytes
            return str(exc)
    return None
