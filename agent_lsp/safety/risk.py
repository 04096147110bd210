"""What a command or a file access may do (`Risk`), what each level makes of it (`Action`),
and the classifier's findings for one command line."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from agent_lsp.config.schema import PermissionLevel
from agent_lsp.safety.paths import Resolved

__all__ = ["LEVEL_ACTIONS", "Action", "Analysis", "Finding", "Part", "Risk", "level_action"]


class Risk(StrEnum):
    READ = "read"  # reads inside the workspace
    WRITE = "write"  # changes files inside the workspace
    PROJECT = "project"  # runs the project's own tests or build (python -m pytest, go test ./...)
    EXEC = "exec"  # runs code or has effects outside the editor
    NETWORK = "network"
    OUTSIDE = "outside"  # reads outside the workspace and extra roots
    SECRET = "secret"  # touches a secret file or the environment's secrets
    DESTRUCTIVE = "destructive"  # deletes or discards work
    FORBIDDEN = "forbidden"  # the built-in list: rm -rf /, push --force, curl | sh ...
    PROTECTED = "protected"  # writes git internals or the policy files: never
    UNDECIDABLE = "undecidable"


class Action(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"

    @property
    def rank(self) -> int:
        return ("allow", "ask", "deny").index(self.value)


A, Q, D = Action.ALLOW, Action.ASK, Action.DENY
# Per level L0..L3, for a command that runs inside the OS sandbox. L0 read-only (and only the
# vetted programs, see `level_action`); L1 also edits inside the workspace (edit tools) and runs
# the project's own test and build commands; L2 asks for every other side effect; L3 runs
# workspace writes and allowlisted commands on its own, still asks for the rest and denies
# what it cannot decide.
LEVEL_ACTIONS: dict[Risk, tuple[Action, Action, Action, Action]] = {
    Risk.READ: (A, A, A, A),
    Risk.PROJECT: (D, A, A, A),
    Risk.WRITE: (D, D, Q, A),
    Risk.EXEC: (D, D, Q, Q),
    Risk.NETWORK: (D, D, Q, Q),
    Risk.OUTSIDE: (D, D, Q, Q),
    Risk.SECRET: (Q, Q, Q, Q),
    Risk.DESTRUCTIVE: (D, D, Q, Q),
    Risk.FORBIDDEN: (D, D, D, D),
    Risk.PROTECTED: (D, D, D, D),
    Risk.UNDECIDABLE: (D, D, Q, D),
}
# What an allow rule can lift: a command rule lifts these at L2/L3 ...
COMMAND_LIFTS = frozenset(
    {Risk.WRITE, Risk.PROJECT, Risk.EXEC, Risk.NETWORK, Risk.DESTRUCTIVE, Risk.FORBIDDEN}
)
# ... and these only for the paths named in the rule (or by a path rule), at any level.
PATH_LIFTS = frozenset({Risk.SECRET, Risk.OUTSIDE})


def level_action(
    risk: Risk, level: PermissionLevel, sandboxed: bool = True, vetted: bool = False
) -> Action:
    """What `level` makes of `risk`. A command is `vetted` when its program is one of the small
    set that cannot run code whatever its (grammar-checked) arguments: only those run at L0, and
    only those run unasked without an OS sandbox (fail closed: everything else asks)."""
    action = LEVEL_ACTIONS[risk][int(level.value[1])]
    if risk is Risk.READ and vetted:
        return action
    if level is PermissionLevel.L0 and risk is Risk.READ:
        return Action.DENY
    if not sandboxed and action is Action.ALLOW:
        return Action.ASK
    return action


@dataclass(frozen=True)
class Finding:
    risk: Risk
    reason: str
    token: int | None = None  # the argv index that caused it (None: the whole command)
    path: Resolved | None = None
    tree: bool = False  # a recursive read of the folder `path`


@dataclass
class Part:
    """One simple command and what it may do."""

    argv: list[str]  # assignments and words (unknown parts shown as "\x00")
    cwd: Path
    core_start: int = 0  # argv[core_start:] is the program run, past assignments and wrappers
    plain_wrappers: bool = True  # only wrappers like timeout/nice/nohup (no env, sudo, xargs)
    aliases: list[list[str]] = field(default_factory=list[list[str]])  # for deny rules
    context: str = "top"
    findings: list[Finding] = field(default_factory=list[Finding])
    downloads: bool = False  # curl, wget ...
    runs_code: bool = False  # an interpreter running code it reads (stdin, a file, a string)
    vetted: bool = False  # a program of the vetted read-only set, every argument grammar-known
    network: bool = False

    @property
    def core(self) -> list[str]:
        return self.argv[self.core_start :]

    @property
    def risks(self) -> frozenset[Risk]:
        return frozenset(f.risk for f in self.findings) or frozenset({Risk.READ})

    def text(self) -> str:
        return " ".join(a.replace("\x00", "…") for a in self.argv) or "(redirection)"


@dataclass
class Analysis:
    command: str
    parts: list[Part]
    problems: list[str]  # why (part of) the command line is undecidable

    @property
    def risks(self) -> frozenset[Risk]:
        out: set[Risk] = {Risk.UNDECIDABLE} if self.problems else set()
        for part in self.parts:
            out |= part.risks
        return frozenset(out) or frozenset({Risk.READ})

    @property
    def network(self) -> bool:
        return any(p.network for p in self.parts)

    def reasons(self) -> list[str]:
        seen: list[str] = [f"undecidable: {p}" for p in self.problems]
        for part in self.parts:
            for f in part.findings:
                if f.risk is not Risk.READ and (text := f"{f.risk.value}: {f.reason}") not in seen:
                    seen.append(text)
        return seen
