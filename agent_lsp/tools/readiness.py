"""Recognise a long-running command (a dev server, a watcher) before it runs, and what "up"
means for it: the ports it will listen on and the lines it prints once ready.

`recognise` reads the command line the model gave `run_command` (and the package.json scripts
and Go sources it names); it runs nothing. `readiness_run` then runs the command as a
readiness check."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agent_lsp.tools.readiness_data import (
    FINITE,
    LONG_SCRIPTS,
    PASS_THROUGH,
    PORT_ENV,
    PORT_OPTIONS,
    READY_LINES,
    RUN_VIA,
    RUNNERS,
    SERVERS,
    WATCH_ARGS,
    WATCH_FLAGS,
    WATCHERS,
)

__all__ = ["Readiness", "parse_ready", "recognise"]

_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "|&"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_GO_LISTENS = re.compile(r"ListenAndServe|net\.Listen\(|http\.Serve\(|\.Run\(|\.Start\(\"")
_GO_PORT = re.compile(r"\":(\d{2,5})\"")
_PORT_ASSIGN = re.compile(r"\bPORT=(\d{2,5})\b")
_MAX_DEPTH = 4


@dataclass(frozen=True)
class Readiness:
    """How to tell that a long-running command is up."""

    reason: str  # what it was recognised as ("vite", "npm script dev: node server.js", ...)
    ports: tuple[int, ...] = ()  # ports that accept connections once it is up
    line: str = "|".join(f"({r})" for r in READY_LINES)  # an ERE for a ready line ("" none)


def parse_ready(ready: str) -> tuple[tuple[int, ...], str | None]:
    """The model's `ready` argument: a port number, or an extended regular expression for a
    line (`\\d` is accepted for `[0-9]`). Raises ValueError when neither."""
    text = ready.strip()
    if re.fullmatch(r"[+-]?[0-9]+", text):  # a number is a port, never a line: `-1` too
        port = int(text)
        if not 0 < port < 65536:
            raise ValueError(f"ready: {port} is not a port number (1-65535)")
        return (port,), None
    line = re.sub(r"(?<!\\)\\d", "[0-9]", text)
    try:
        re.compile(line)
    except re.error as exc:
        raise ValueError(f"ready: {text!r} is neither a port nor a valid regex: {exc}") from exc
    return (), line


def recognise(command: str, cwd: Path, env: Mapping[str, str] | None = None) -> Readiness | None:
    """A `Readiness` when `command` starts a server or watcher that would run until killed;
    None when it looks like a command that finishes (or cannot be read)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return None
    env = os.environ if env is None else env
    found: Readiness | None = None
    for words in _segments(tokens):
        if words[:1] == ["cd"] and len(words) == 2:
            cwd = cwd / Path(words[1]).expanduser()
            continue
        found = _simple(words, cwd, env, 0) or found
    return found


def _segments(tokens: Sequence[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in _OPERATORS or set(token) <= set("&|;()<>"):
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def _simple(words: list[str], cwd: Path, env: Mapping[str, str], depth: int) -> Readiness | None:
    """One simple command (its words after expansion of nothing)."""
    ports: list[int] = []
    while words and _ASSIGN.match(words[0]):
        name, _, value = words[0].partition("=")
        if name in PORT_ENV and value.isdigit():
            ports.append(int(value))
        words = words[1:]
    words = _unwrap(words)
    if not words or depth > _MAX_DEPTH:
        return None
    ports += [int(env[name]) for name in PORT_ENV if env.get(name, "").isdigit()]
    found = _program(words, cwd, env, depth)
    if found is None:
        return None
    return replace(found, ports=tuple(dict.fromkeys((*ports, *found.ports))))


def _unwrap(words: list[str]) -> list[str]:
    """`npx vite` -> `vite`; `python -m uvicorn app:app` -> `uvicorn app:app`;
    `python manage.py runserver` -> `manage.py runserver`."""
    while words:
        name = Path(words[0]).name
        if name in PASS_THROUGH:
            rest = words[1:]
            while rest and (rest[0].startswith("-") or _ASSIGN.match(rest[0])):
                rest = rest[1:]
            words = rest
        elif name in RUN_VIA and words[1:2] == [RUN_VIA[name]]:
            words = words[2:]
        elif re.fullmatch(r"python[0-9.]*", name) and len(words) > 1:
            if words[1] == "-m" and len(words) > 2:
                words = words[2:]
            elif words[1].endswith(".py"):
                words = [Path(words[1]).name, *words[2:]]
            else:
                return words
        else:
            return words
    return words


def _program(words: list[str], cwd: Path, env: Mapping[str, str], depth: int) -> Readiness | None:
    name, args = Path(words[0]).name, words[1:]
    if name in RUNNERS:
        return _script(name, args, cwd, env, depth)
    if name == "go" and args[:1] == ["run"]:
        return _go_run(args[1:], cwd)
    first = next((a for a in args if not a.startswith("-")), "")
    if name in WATCHERS and (WATCH_FLAGS & set(args) or first in WATCH_ARGS.get(name, ())):
        return Readiness(f"{name} in watch mode")
    table = SERVERS.get(name)
    if table is None or first in FINITE or FINITE & set(args):
        return None
    sub = next((w for w in args if not w.startswith("-") and w in table), "")
    if sub not in table:
        return None
    ports = [p for p in [_port_from(args, name) or table[sub]] if p]
    return Readiness(f"{name} {sub}".strip(), tuple(ports))


def _port_from(args: Sequence[str], name: str) -> int | None:
    """`--port 4000`, `--port=4000`, `-p 4000`, `--bind 0.0.0.0:4000`, or a server's
    positional port / address (`http.server 9000`, `runserver 0.0.0.0:9000`)."""
    found: int | None = None  # the last one given wins (`npm run dev -- --port 6000`)
    for i, arg in enumerate(args):
        option, eq, value = arg.partition("=")
        if option in PORT_OPTIONS:
            value = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            tail = value.rpartition(":")[2]
            if tail.isdigit():
                found = int(tail)
    if found is not None:
        return found
    positional = [a for a in args if not a.startswith("-")]
    if name in {"http.server", "manage.py", "django-admin"}:
        for arg in positional:
            tail = arg.rpartition(":")[2]
            if tail.isdigit():
                return int(tail)
    return None


def _script(
    runner: str, args: list[str], cwd: Path, env: Mapping[str, str], depth: int
) -> Readiness | None:
    """`npm run dev`, `npm start`, `yarn dev`, `pnpm run serve -- --port 4000` resolved
    through package.json to what the script runs."""
    if args[:1] in (["run"], ["run-script"]):
        args = args[1:]
    elif runner == "npm" and args[:1] != ["start"]:
        return None
    while args and args[0].startswith("-"):
        args = args[1:]
    if not args:
        return None
    script, extra = args[0], [a for a in args[1:] if a != "--"]
    body = _scripts(cwd).get(script)
    if body is not None:
        inner = _script_body(body, extra, cwd, env, depth)
        if inner is not None:
            return replace(inner, reason=f"{runner} script {script}: {body}")
    if script in LONG_SCRIPTS:
        reason = f"{runner} script {script}" + (f": {body}" if body else "")
        named = [int(p) for p in _PORT_ASSIGN.findall(body or "")]
        ports = [p for p in [_port_from(extra, ""), *named] if p]
        return Readiness(reason, tuple(dict.fromkeys(ports)))
    return None


def _script_body(
    body: str, extra: list[str], cwd: Path, env: Mapping[str, str], depth: int
) -> Readiness | None:
    line = body + "".join(" " + shlex.quote(a) for a in extra)
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segments = _segments(list(lexer))
    except ValueError:
        return None
    found: Readiness | None = None
    for words in segments:
        found = _simple(words, cwd, env, depth + 1) or found
    return found


def _scripts(cwd: Path) -> dict[str, str]:
    try:
        data = json.loads((cwd / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return {}
    return {str(k): v for k, v in scripts.items() if isinstance(v, str)}  # pyright: ignore[reportUnknownVariableType]


def _go_run(args: list[str], cwd: Path) -> Readiness | None:
    """`go run .` / `go run ./cmd/server` / `go run main.go` of a main package that listens."""
    targets = [a for a in args if not a.startswith("-")][:1] or ["."]
    target = cwd / targets[0]
    files = [target] if target.suffix == ".go" else sorted(target.glob("*.go"))
    sources: list[str] = []
    for path in files[:50]:
        try:
            sources.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    main = [s for s in sources if re.search(r"^package main\b", s, re.M)]
    if not any(_GO_LISTENS.search(s) for s in main):
        return None
    ports = dict.fromkeys(int(m) for s in main for m in _GO_PORT.findall(s))
    return Readiness(f"go run {targets[0]} (a main package that listens)", tuple(ports))
