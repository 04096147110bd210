"""What a project's ``scripts.test`` says about its test run: the runner's own options (kept),
the variables it sets, and the Node flags it passes, minus what would make the run interactive
or take over the machine-readable report."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

__all__ = ["ScriptRun", "invokes", "runner_args", "script_run"]

_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"npx", "cross-env", "cross-env-shell", "dotenv", "exec", "run", "--"})
_NODE_FLAGS = frozenset({"--experimental-vm-modules", "--no-warnings"})
# Options of the script dropped because the adapter sets its own (reporters, output file, no
# watch, no coverage) or because they narrow or change the run in a way the agent cannot
# read (bail, only changed files, snapshot updates). Each maps to "takes a value".
_DROPPED: dict[str, dict[str, bool]] = {
    "jest": {
        "--watch": False,
        "--watchAll": False,
        "--json": False,
        "--outputFile": True,
        "--reporters": True,
        "--coverage": False,
        "--collectCoverage": False,
        "--coverageReporters": True,
        "--coverageDirectory": True,
        "--ci": False,
        "--no-ci": False,
        "--listTests": False,
        "--showConfig": False,
        "-u": False,
        "--updateSnapshot": False,
        "-o": False,
        "--onlyChanged": False,
        "--changedSince": True,
        "--lastCommit": False,
        "--bail": False,
        "-b": False,
        "--color": False,
        "--colors": False,
        "--no-color": False,
        "--no-colors": False,
        "--testLocationInResults": False,
    },
    "vitest": {
        "--watch": False,
        "-w": False,
        "--run": False,
        "--reporter": True,
        "--outputFile": True,
        "--coverage": False,
        "--ui": False,
        "--open": False,
        "--bail": True,
        "-u": False,
        "--update": False,
        "--changed": False,
        "--color": False,
        "--no-color": False,
    },
}
_SUBCOMMANDS = {"jest": frozenset(), "vitest": frozenset({"run", "watch", "dev"})}


@dataclass(frozen=True)
class ScriptRun:
    """The runner invocation found in ``scripts.test`` (empty when there is none)."""

    args: tuple[str, ...] = ()  # the runner's options and test filters, as written
    env: dict[str, str] = field(default_factory=dict[str, str])  # ``NAME=value`` before it
    node_flags: tuple[str, ...] = ()  # Node options the script passes (``node --flag jest``)

    def option(self, *names: str) -> str | None:
        """The value of the first of ``names`` in ``args`` (``--name=v`` or ``--name v``)."""
        for index, word in enumerate(self.args):
            flag, eq, value = word.partition("=")
            if flag in names:
                if eq:
                    return value
                following = self.args[index + 1 : index + 2]
                return following[0] if following and not following[0].startswith("-") else ""
        return None


def _is_runner(word: str, runner: str) -> bool:
    path = PurePosixPath(word.replace("\\", "/"))
    if path.name in (runner, f"{runner}.js", f"{runner}.mjs", f"{runner}.cjs", f"{runner}.cmd"):
        return True
    return path.parent.name == "bin" and path.parent.parent.name in (runner, "jest-cli")


def _segments(script: str) -> list[list[str]]:
    try:
        lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(word)
    return segments


def _keep(args: list[str], runner: str) -> tuple[str, ...]:
    dropped = _DROPPED[runner]
    kept: list[str] = []
    skip_value = False
    for index, word in enumerate(args):
        if skip_value:
            skip_value = False
            if not word.startswith("-"):
                continue
        if index == 0 and word in _SUBCOMMANDS[runner]:
            continue
        flag, eq, _ = word.partition("=")
        base = re.sub(r"\..*$", "", flag) if flag.startswith("--") else flag
        if base in dropped:
            skip_value = dropped[base] and not eq
            continue
        kept.append(word)
    return tuple(kept)


def runner_args(args: list[str], runner: str) -> tuple[str, ...]:
    """``args`` given to ``runner`` ("jest", "vitest") by other means than a script (a wrapper
    calling jest's ``run``), less what the adapter sets or drops, as for a script."""
    return _keep(args, runner)


def invokes(script: str, runner: str) -> bool:
    """Whether the ``script`` command line runs ``runner`` ("jest", "vitest")."""
    return any(_is_runner(word, runner) for words in _segments(script) for word in words)


def script_run(script: str, runner: str) -> ScriptRun:
    """The first invocation of ``runner`` ("jest", "vitest") in the ``script`` command line."""
    for words in _segments(script):
        env: dict[str, str] = {}
        node_flags: list[str] = []
        for index, word in enumerate(words):
            if _is_runner(word, runner):
                args = _keep(words[index + 1 :], runner)
                return ScriptRun(args, env, tuple(node_flags))
            if _ASSIGNMENT.match(word):
                name, _, value = word.partition("=")
                env[name] = value
            elif word in _NODE_FLAGS:
                node_flags.append(word)
            elif word.startswith("-") or word in _WRAPPERS or word in ("node", "pnpm", "yarn"):
                continue
            else:
                break  # another command (``tsc``, ``eslint``...) heads this segment
    return ScriptRun()
