"""Who may run what. A minimal, fail-closed policy until the full policy engine lands:
read-only commands of a known set run; anything else asks the user; no answer means no."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from enum import StrEnum

from agent_lsp.seams import EditorChannel

# Programs that only read, when called without shell syntax (no pipes, redirections, $(...)).
READ_ONLY_PROGRAMS = frozenset(
    {
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "rg",
        "find",
        "pwd",
        "echo",
        "which",
        "file",
        "stat",
        "du",
        "diff",
        "sort",
        "uniq",
        "tree",
    }
)
READ_ONLY_GIT = frozenset({"status", "diff", "log", "show", "branch", "blame", "ls-files"})
SHELL_SYNTAX = frozenset(";&|<>`$(){}\n\r\\*?[]~!#")
FIND_WRITES = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fls"})

ALLOW_ONCE, ALWAYS_ALLOW, DENY = "Allow once", "Always allow", "Deny"


class Decision(StrEnum):
    ALLOW = "allow"
    ASK = "ask"


def classify(command: str) -> Decision:
    """ALLOW only for a plain read-only command; everything undecidable asks (fail closed)."""
    if any(ch in SHELL_SYNTAX for ch in command) or len(command) > 2000:
        return Decision.ASK
    try:
        words = shlex.split(command)
    except ValueError:
        return Decision.ASK
    if not words or "=" in words[0]:
        return Decision.ASK
    program, rest = words[0], words[1:]
    if program == "git":
        return Decision.ALLOW if rest and rest[0] in READ_ONLY_GIT else Decision.ASK
    if program == "find" and FIND_WRITES & set(rest):
        return Decision.ASK
    return Decision.ALLOW if program in READ_ONLY_PROGRAMS else Decision.ASK


@dataclass
class CommandPolicy:
    """Asks through the editor channel; remembers "Always allow" per exact command."""

    channel: EditorChannel
    always: set[str] = field(default_factory=set[str])

    async def allows(self, command: str) -> tuple[bool, str]:
        """(allowed, who decided) — recorded with the command."""
        if classify(command) is Decision.ALLOW:
            return True, "policy: read-only"
        if command in self.always:
            return True, "user: always allow"
        answer = await self.channel.ask(
            f"agent-lsp wants to run: {command}", [ALLOW_ONCE, ALWAYS_ALLOW, DENY]
        )
        if answer == ALWAYS_ALLOW:
            self.always.add(command)
        if answer in (ALLOW_ONCE, ALWAYS_ALLOW):
            return True, f"user: {answer.lower()}"
        return False, "user: denied" if answer == DENY else "no answer (denied)"
