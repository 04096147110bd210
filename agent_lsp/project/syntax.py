"""Cheap syntax checks run after an edit, so a broken file is refused before it lands.

Python is compiled in process; JavaScript (.js/.mjs/.cjs) goes through `node --check` and Go
through `gofmt -e`, on a temporary copy, when the tool is installed (otherwise the check is
skipped), confined like every program the agent runs (a `node` first on `PATH` may be the
project's own). A checker that fails to start or to answer in time counts as "no error".
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from adapters.shell import scratch_dir
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.sandbox import Confinement, Sandbox

CHECK_TIMEOUT = 10.0  # seconds
JS_SUFFIXES = frozenset({".js", ".mjs", ".cjs"})
_MODULE_ERRORS = ("outside a module", "Unexpected token 'export'", "import.meta")


async def syntax_error(path: Path, text: str) -> str | None:
    """A one-line description of the first syntax error, or None (also for unknown languages)."""
    if path.suffix in {".py", ".pyi"}:
        return _python_error(path, text)
    if path.suffix in JS_SUFFIXES:
        return await _js_error(path, text)
    if path.suffix == ".go":
        return await _checked(("gofmt", "-e", "-l"), path.name, text, _gofmt_message)
    return None


def _python_error(path: Path, text: str) -> str | None:
    try:
        compile(text, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # e.g. null bytes
        return str(exc)
    return None


async def _js_error(path: Path, text: str) -> str | None:
    """`node --check` as the module type node would give the file, then as the other type when
    the first says the text is a module (or is not)."""
    suffix = path.suffix
    if suffix == ".js":
        suffix = ".mjs" if _package_type(path.parent) == "module" else ".cjs"
    error = await _checked(("node", "--check"), path.stem + suffix, text, _node_message)
    if error and path.suffix == ".js" and any(m in error for m in _MODULE_ERRORS):
        other = ".cjs" if suffix == ".mjs" else ".mjs"
        return await _checked(("node", "--check"), path.stem + other, text, _node_message)
    return error


def _package_type(folder: Path) -> str | None:
    """The "type" of the nearest package.json, as node reads it."""
    for parent in (folder, *folder.parents):
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data: object = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            kind = data.get("type") if isinstance(data, dict) else None
            return kind if isinstance(kind, str) else None
    return None


async def _checked(
    argv: tuple[str, ...], name: str, text: str, parse: Callable[[str, Path], str | None]
) -> str | None:
    """Run `argv` on a temporary file holding `text`; its complaint, or None."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None
    shell = _checker_shell()
    folder = scratch_dir(shell, "agent-lsp-syntax-")
    try:
        target = folder / name
        await asyncio.to_thread(_write, target, text)
        result = await shell.run((exe, *argv[1:], str(target)), cwd=folder, timeout=CHECK_TIMEOUT)
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)
    if result.timed_out or result.exit_code in (None, 0, 126, 127):
        return None
    first = next((line for line in result.output.splitlines() if line.strip()), "failed")
    return parse(result.output, target) or f"{argv[0]}: {first.replace(str(target), name)}"


def _write(target: Path, text: str) -> None:
    with target.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)


@functools.cache
def _checker_shell() -> ConfinedShell:
    """Sees nothing of the workspace, writes only its own scratch folder."""
    return ConfinedShell(Sandbox(), Confinement())


def _node_message(stderr: str, target: Path) -> str | None:
    """`line N: SyntaxError: …` from node's report (`file:N`, the source, a caret, the error)."""
    line = re.search(rf"^{re.escape(str(target))}:(\d+)", stderr, re.MULTILINE)
    error = re.search(r"^(\w*Error: .*)$", stderr, re.MULTILINE)
    if error is None:
        return None
    return f"line {line.group(1)}: {error.group(1)}" if line else error.group(1)


def _gofmt_message(stderr: str, target: Path) -> str | None:
    """`line N: message` from gofmt's first `file:N:C: message`."""
    found = re.search(rf"^{re.escape(str(target))}:(\d+):\d+: (.*)$", stderr, re.MULTILINE)
    return f"line {found.group(1)}: {found.group(2)}" if found else None
