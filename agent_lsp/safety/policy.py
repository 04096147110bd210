"""Who may run what: the asking side of the safety policy (`agent_lsp.safety`).

`SafetyPolicy` decides allow / ask / deny from the level, the rules and the command
classifier; `CommandPolicy` asks the user through the editor channel when needed (Allow once /
Always allow / Deny; no answer means deny — only the user approves, never the model) and
records every outcome as a typed `Decision`."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent_lsp.config.schema import PermissionLevel
from agent_lsp.errors import EditRejectedError
from agent_lsp.messages import AgentEvent
from agent_lsp.safety.decision import Decision
from agent_lsp.safety.engine import Evaluation, SafetyPolicy, mcp_tool_name
from agent_lsp.safety.paths import Resolved
from agent_lsp.safety.risk import Action
from agent_lsp.seams import EditorChannel

__all__ = [
    "ALLOW_ONCE",
    "ALWAYS_ALLOW",
    "DENY",
    "REVIEW_LIMIT",
    "CommandPolicy",
    "Decision",
    "SafetyPolicy",
    "Unattended",
    "visible",
]

ALLOW_ONCE, ALWAYS_ALLOW, DENY = "Allow once", "Always allow", "Deny"
# The longest command (as shown, escapes included) put to the user: what is asked is shown whole,
# and a longer one cannot be reviewed in a prompt, so it is refused without asking.
REVIEW_LIMIT = 2_000


# Letters and marks that show as nothing (or as a blank) though they are not spaces: the
# Hangul fillers, the braille blank, variation selectors, the combining grapheme joiner, the
# Khmer inherent vowels, the Mongolian selectors — padding that could push a forged line
# into a question.
_BLANK = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\uffa0"
    "\ufe00-\ufe0f\U000e0100-\U000e01ef]"
)


def visible(text: str) -> str:
    """Text as a person can read it in a prompt: control, format, separator and blank-looking
    characters escaped, never cut (the model writes the command, a server names its tools;
    neither must be able to forge or hide part of the prompt)."""
    out: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch == "\n":
            out.append("⏎")
        elif (cat[0] in "CZ" and ch != " ") or _BLANK.match(ch):
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


class Unattended:
    """An `EditorChannel` nobody watches (a check the harness runs on its own with no one to
    ask): every question goes unanswered, which is a deny."""

    def buffers(self) -> Mapping[Path, str]:
        return {}

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        raise EditRejectedError(f"{label}: nobody to apply it")

    async def report(self, event: AgentEvent) -> None:
        return None

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        return None


@dataclass(eq=False)  # one gate per task, told apart by identity (hashable)
class CommandPolicy:
    """Asks through the editor channel; remembers "Always allow" per exact command for the
    session. `engine` (or, without one, a default policy at `level` for the folder the command
    runs in) decides what needs asking."""

    channel: EditorChannel
    always: set[str] = field(default_factory=set[str])
    engine: SafetyPolicy | None = None
    level: PermissionLevel | None = None
    on_decision: Callable[[Decision], None] | None = None
    decisions: list[Decision] = field(default_factory=list[Decision])
    # what `permit_project_code` was granted (a task's own; the editor's runs share the
    # session's): the unconfined run of the project's code is asked once per gate
    granted: set[str] = field(default_factory=set[str])

    def engine_for(self, root: Path | None = None) -> SafetyPolicy:
        if self.engine is None:
            self.engine = SafetyPolicy(root or Path.cwd(), self.level or PermissionLevel.L2)
        return self.engine

    async def decide(
        self,
        command: str,
        cwd: Path | None = None,
        sandbox: str | None = None,
        posix: bool = True,
    ) -> tuple[Decision, Evaluation]:
        """The decision on one command line (asking the user when the policy says ask);
        `sandbox` names how the command will run, for the record; `posix=False` for cmd or
        PowerShell, where nothing counts as read-only."""
        engine = self.engine_for(cwd)
        where = cwd or engine.root
        evaluation = engine.command(command, where, posix)
        shown = visible(command)
        if evaluation.action is Action.ASK and len(shown) > REVIEW_LIMIT:
            why = (
                f"{len(shown)} characters are too long to review in a prompt "
                f"(at most {REVIEW_LIMIT})"
            )
            evaluation = replace(
                evaluation,
                action=Action.DENY,
                rule=f"policy: {why}",
                reasons=(*evaluation.reasons, why),
                always_ok=False,
            )
        question = f"agent-lsp wants to run: {shown}"
        decision = await self._settle(
            evaluation, command, where, "run_command", question, command, sandbox=sandbox
        )
        return decision, evaluation

    async def allows(self, command: str, cwd: Path | None = None) -> tuple[bool, str]:
        """(allowed, who decided) — the decision itself is in `decisions`."""
        decision, _ = await self.decide(command, cwd)
        return decision.allowed, decision.decided_by

    async def check_file(self, tool: str, res: Resolved, write: bool) -> Decision:
        engine = self.engine_for(res.path.parent)
        evaluation = engine.file(tool, res, write)
        verb = "write" if write else "read"
        subject = f"{tool} {res.raw}"
        question = f"agent-lsp wants to {verb} {visible(res.raw)} (a protected or secret file)"
        return await self._settle(
            evaluation, subject, engine.root, tool, question, None, quiet=True
        )

    async def permit_project_code(self, tool: str = "run_tests", detail: str = "") -> Decision:
        """The one gate for the project's code the harness runs by itself — the tests
        (`run_tests`, the done-check, `agentLsp.runTests`, run-on-save, `agent-lsp test`, an
        improvement's dry run) and the linters (`tool="lint"`): the level and the rules
        decide; without an OS sandbox the user is asked, once per gate (a task). The programs
        then run through `ConfinedShell`, as every command does."""
        if self.granted:
            engine = self.engine_for()
            return Decision(
                decision="allowed",
                level=engine.level,
                rule="allowed earlier in this task",
                answered_by="user",
                answer=ALLOW_ONCE,
                command=tool,
                cwd=str(engine.root),
                tool=tool,
            )
        decision = await self.check_tool(tool, read_only=False, detail=detail)
        if decision.allowed and not self.engine_for().sandboxed:
            self.granted.add("project code")
        return decision

    async def check_tool(self, tool: str, read_only: bool, detail: str = "") -> Decision:
        """`detail`: what the tool would run, shown whole in the question."""
        engine = self.engine_for()
        evaluation = engine.tool(tool, read_only)
        question = f"agent-lsp wants to use the tool {tool}" + (f": {detail}" if detail else "")
        return await self._settle(
            evaluation, tool, engine.root, tool, question, f"tool:{tool}", quiet=True
        )

    async def check_mcp(
        self, server: str, tool: str, arguments: str, allowed: bool, sandbox: str | None = None
    ) -> Decision:
        """A call of `tool` of the MCP server `server` with `arguments` (JSON text): the rules,
        the server's `allow` list (`allowed`) and the level decide; asked, the question shows
        the server, the tool and the arguments whole. "Always allow" remembers that exact
        call — server, tool and arguments apart — for the session."""
        engine = self.engine_for()
        evaluation = engine.mcp_call(server, tool, allowed)
        subject = f"{mcp_tool_name(server, tool)} {arguments}"
        shown = (
            f"the MCP tool {visible(tool)} of server {visible(server)} with {visible(arguments)}"
        )
        if evaluation.action is Action.ASK and len(shown) > REVIEW_LIMIT:
            why = f"the call is too long to review in a prompt ({len(shown)} characters)"
            evaluation = replace(
                evaluation, action=Action.DENY, rule=f"policy: {why}", always_ok=False
            )
        question = f"agent-lsp wants to call {shown}"
        return await self._settle(
            evaluation,
            subject,
            engine.root,
            "mcp_call",
            question,
            "mcp:" + json.dumps([server, tool, arguments]),  # by the pair, never one name
            sandbox=sandbox,
        )

    async def _settle(
        self,
        ev: Evaluation,
        subject: str,
        cwd: Path,
        tool: str,
        question: str,
        remember_key: str | None,
        *,
        sandbox: str | None = None,
        quiet: bool = False,
    ) -> Decision:
        """`quiet`: a plain allow is not recorded (tool and file checks that found nothing)."""
        level = self.engine_for().level
        base = Decision(
            decision="denied",
            level=level,
            rule=ev.rule,
            command=subject,
            cwd=str(cwd),
            tool=tool,
            reasons=list(ev.reasons),
            sandbox=sandbox,
        )
        if ev.action is not Action.ASK:
            if ev.action is Action.ALLOW:
                decision = base.model_copy(update={"decision": "allowed"})
                return decision if quiet else self._record(decision)
            return self._record(base)
        if ev.always_ok and remember_key is not None and remember_key in self.always:
            return self._record(
                base.model_copy(
                    update={"decision": "allowed", "answered_by": "user", "answer": ALWAYS_ALLOW}
                )
            )
        # "Always allow" only where the evaluation permits it and the answer is remembered
        always = ev.always_ok and remember_key is not None
        options = [ALLOW_ONCE, ALWAYS_ALLOW, DENY] if always else [ALLOW_ONCE, DENY]
        why = "; ".join(visible(r) for r in ev.reasons)  # every reason, whole
        answer = await self.channel.ask(question + (f" — {why}" if why else ""), options)
        if answer not in options:
            answer = None
        if answer == ALWAYS_ALLOW and remember_key is not None:
            self.always.add(remember_key)
        allowed = answer in (ALLOW_ONCE, ALWAYS_ALLOW)
        return self._record(
            base.model_copy(
                update={
                    "decision": "allowed" if allowed else "denied",
                    "answered_by": "no answer" if answer is None else "user",
                    "answer": answer,
                    "asked": True,
                }
            )
        )

    def _record(self, decision: Decision) -> Decision:
        self.decisions.append(decision)
        if self.on_decision is not None:
            self.on_decision(decision)
        return decision
