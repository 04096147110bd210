"""`SafetyPolicy`: the level, the rules and the classifier combined into one answer per
command, file access or tool — allow, ask or deny, with the rule that decided. Pure: asking
the user and recording the answer is `agent_lsp.safety.policy.CommandPolicy`'s job."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent_lsp.config.schema import PermissionLevel
from agent_lsp.safety.classify import Classifier
from agent_lsp.safety.paths import PathGuard, Resolved
from agent_lsp.safety.risk import (
    COMMAND_LIFTS,
    PATH_LIFTS,
    Action,
    Analysis,
    Finding,
    Part,
    Risk,
    level_action,
)
from agent_lsp.safety.rules import Rule, RuleSet

__all__ = ["TOOL_KINDS", "Evaluation", "SafetyPolicy", "mcp_tool_name"]

L0, L1, L2, L3 = PermissionLevel.L0, PermissionLevel.L1, PermissionLevel.L2, PermissionLevel.L3
TOOL_KINDS = {
    "edit_file": "edit",
    "write_file": "edit",
    "run_tests": "test",
    "lint": "lint",  # the harness's linters (lint.enabled), not a model tool
    "run_command": "command",
    "remember": "notes",
    "update_task": "notes",
}


def mcp_tool_name(server: str, tool: str) -> str:
    """How a rule names one MCP tool: `[[allow]] tool = "mcp__docs__search"`."""
    return f"mcp__{server}__{tool}"


_NO_ALWAYS = frozenset(
    {Risk.SECRET, Risk.DESTRUCTIVE, Risk.FORBIDDEN, Risk.UNDECIDABLE, Risk.OUTSIDE}
)


@dataclass(frozen=True)
class Evaluation:
    action: Action
    rule: str  # what decided: a rule's label, "level L2: ...", "policy: read-only"
    reasons: tuple[str, ...] = ()
    risks: frozenset[Risk] = frozenset()
    network: bool = False  # the command may use the network once allowed
    secret: bool = False  # secret files are involved (the sandbox then shows them)
    always_ok: bool = True  # "Always allow" may be offered


_READ_ONLY = (Action.ALLOW, "policy: read-only")


def _worst(items: Iterable[tuple[Action, str]]) -> tuple[Action, str]:
    """The strictest verdict (the first of equals, a named rule before plain read-only)."""
    best = _READ_ONLY
    for item in items:
        if item[0].rank > best[0].rank or (best == _READ_ONLY and item[0] is Action.ALLOW):
            best = item
    return best


class SafetyPolicy:
    """Decides for one workspace at one level with one set of rules."""

    def __init__(
        self,
        root: Path,
        level: PermissionLevel = L2,
        rules: RuleSet | None = None,
        extra_roots: Iterable[Path] = (),
        home: Path | None = None,
        windows: bool | None = None,
        sandboxed: bool = True,
        trusted: bool = True,
    ) -> None:
        """`sandboxed`: commands run inside the OS sandbox. Without one the policy fails
        closed: only vetted read-only commands run unasked. `trusted`: the user trusts the
        workspace (its init.d steps may run); `build_policy` says which."""
        self.guard = PathGuard(root, extra_roots, home, windows)
        self.level = level
        self.sandboxed = sandboxed
        self.trusted = trusted
        self.rules = rules or RuleSet()
        self.classifier = Classifier(self.guard)
        self._forbidden_rules: dict[tuple[str, ...], bool] = {}

    @property
    def root(self) -> Path:
        return self.guard.root

    def _rules(self, action: Action, tool: str) -> list[Rule]:
        return [r for r in self.rules.of(action) if r.command is None and r.for_tool(tool)]

    # ---- commands -----------------------------------------------------------------------
    def command(self, command: str, cwd: Path | None = None, posix: bool = True) -> Evaluation:
        """`posix=False`: the command runs in another shell (cmd, PowerShell), whose syntax
        the classifier does not know — nothing then counts as read-only."""
        analysis = self.classifier.analyze(command, cwd or self.root)
        if not posix:
            for part in analysis.parts:
                part.findings.append(Finding(Risk.EXEC, "runs in a shell that is not POSIX"))
        return self.judge(analysis)

    def judge(self, analysis: Analysis) -> Evaluation:
        tool = "run_command"
        for rule in self._rules(Action.DENY, tool):
            if rule.path is None:
                return Evaluation(Action.DENY, rule.label, risks=analysis.risks)
        verdicts: list[tuple[Action, str]] = []
        unlifted: set[Risk] = set()
        network = analysis.network
        for rule in self._rules(Action.ASK, tool):
            if rule.path is None:
                verdicts.append((Action.ASK, rule.label))
        if self.rules.broken:
            verdicts.append((Action.ASK, "policy: a policy file has errors (fail closed)"))
        for problem in analysis.problems:
            risk = Risk.UNDECIDABLE
            unlifted.add(risk)
            verdicts.append(
                (level_action(risk, self.level, self.sandboxed), f"level {self.level}: {problem}")
            )
        for part in analysis.parts:
            verdict, risks, net = self._part(part)
            verdicts.append(verdict)
            unlifted |= risks
            network = network or net
        action, rule = _worst(verdicts)
        # a folder searched recursively shows its secret files empty inside the sandbox; only
        # a secret the command names itself is shown, once the user allowed it
        secret = any(
            f.risk is Risk.SECRET and not (f.tree and self.sandboxed)
            for part in analysis.parts
            for f in part.findings
        )
        return Evaluation(
            action,
            rule,
            tuple(analysis.reasons()),
            analysis.risks,
            network,
            secret,
            not (unlifted & _NO_ALWAYS) and len(analysis.parts) <= 1,
        )

    def _part(self, part: Part) -> tuple[tuple[Action, str], set[Risk], bool]:
        forms = [part.argv, part.core, *part.aliases]
        paths = [f.path for f in part.findings if f.path is not None]
        trees = [f.path.path for f in part.findings if f.tree and f.path is not None]
        for rule in self.rules.of(Action.DENY):
            if any(rule.prefix(f) for f in forms) or self._path_rule(rule, paths, trees):
                return (Action.DENY, rule.label), set(), False
        allow, end = self._allow(part)
        path_allows = self._rules(Action.ALLOW, "run_command")
        verdicts: list[tuple[Action, str]] = []
        unlifted: set[Risk] = set()
        lifted = allow is not None and self.level in (L2, L3)
        read = level_action(Risk.READ, self.level, self.sandboxed, part.vetted)
        if read is not Action.ALLOW and not lifted:
            why = (
                "only vetted read-only commands run at L0"
                if self.level is L0
                else "no OS sandbox: only vetted read-only commands run unasked"
            )
            verdicts.append((read, f"level {self.level}: {why} ({part.text()[:80]})"))
        for f in part.findings:
            if f.risk is Risk.READ:
                continue
            if f.risk is Risk.SECRET and f.tree and self.sandboxed:
                continue  # hidden inside the sandbox
            if lifted and f.risk in COMMAND_LIFTS and self._lifts(f, allow, end):
                continue
            if (
                f.risk in PATH_LIFTS
                and f.path is not None
                and self._path_allowed(f.path, f.token, allow, end, path_allows)
            ):
                continue
            unlifted.add(f.risk)
            action = level_action(f.risk, self.level, self.sandboxed, part.vetted)
            verdicts.append((action, f"level {self.level}: {f.reason}"))
        for rule in self.rules.of(Action.ASK):
            if any(rule.prefix(f) for f in forms) or self._path_rule(rule, paths, trees):
                verdicts.append((Action.ASK, rule.label))
        verdict = _worst(verdicts)
        if verdict[0] is Action.ALLOW and allow is not None and verdicts == []:
            verdict = (Action.ALLOW, allow.label)
        return verdict, unlifted, allow is not None and allow.network

    def _lifts(self, f: Finding, allow: Rule | None, end: int) -> bool:
        """A matching allow rule lifts a forbidden finding only when its own prefix names
        the forbidden form (`git push --force`), never a broad one (`git`)."""
        if f.risk is not Risk.FORBIDDEN or allow is None or allow.command is None:
            return True
        if f.token is not None:
            return f.token < end
        key = allow.command
        if key not in self._forbidden_rules:
            rule_alone = self.classifier.analyze(shlex.join(key), self.root)
            self._forbidden_rules[key] = Risk.FORBIDDEN in rule_alone.risks
        return self._forbidden_rules[key]

    def _path_allowed(
        self,
        res: Resolved,
        token: int | None,
        allow: Rule | None,
        end: int,
        path_allows: list[Rule],
    ) -> bool:
        """A path named inside a matching command rule's prefix, or allowed by a path rule."""
        if allow is not None and token is not None and token < end:
            return True
        return any(r.path is not None and r.matches_path(res, self.guard) for r in path_allows)

    def _allow(self, part: Part) -> tuple[Rule | None, int]:
        """The longest allow rule matching the command as written (or without plain wrappers
        such as timeout/nice), and the argv index where its prefix ends."""
        best: tuple[Rule | None, int] = (None, 0)
        for rule in self.rules.of(Action.ALLOW):
            if rule.command is None:
                continue
            end = 0
            if rule.prefix(part.argv):
                end = len(rule.command)
            elif part.plain_wrappers and rule.prefix(part.core):
                end = part.core_start + len(rule.command)
            if end and (best[0] is None or len(rule.command) > len(best[0].command or ())):
                best = (rule, end)
        return best

    def _path_rule(self, rule: Rule, paths: list[Resolved], trees: list[Path]) -> bool:
        """A path rule matching a path the command names, or a file under a folder it reads
        recursively (a folder too big to walk counts as a match: fail closed)."""
        if rule.path is None or not rule.for_tool("run_command"):
            return False
        if any(rule.matches_path(p, self.guard) for p in paths):
            return True
        for top in trees:
            files = self.classifier.files_under(top) if top.is_dir() else []
            if files is None or any(
                rule.matches_path(self.guard.describe(f), self.guard) for f in files
            ):
                return True
        return False

    # ---- files and tools ----------------------------------------------------------------
    def file(self, tool: str, res: Resolved, write: bool) -> Evaluation:
        """A file tool reading or writing `res` (already known to be inside)."""
        for rule in self._rules(Action.DENY, tool):
            if rule.matches_path(res, self.guard):
                return Evaluation(Action.DENY, rule.label)
        if not res.inside:
            return Evaluation(Action.DENY, f"policy: {res.raw} is outside the workspace")
        if write and res.protected:
            return Evaluation(Action.DENY, f"policy: {res.raw} may not be written by the agent")
        if write and self.level is L0 and not self._tool_allowed(tool):
            return Evaluation(Action.DENY, "level L0: read-only")
        for rule in self._rules(Action.ASK, tool):
            if rule.path is not None and rule.matches_path(res, self.guard):
                return Evaluation(Action.ASK, rule.label, always_ok=False)
        if res.secret:
            for rule in self._rules(Action.ALLOW, tool):
                if rule.path is not None and rule.matches_path(res, self.guard):
                    return Evaluation(Action.ALLOW, rule.label, secret=True)
            what = "write" if write else "read"
            return Evaluation(
                Action.ASK,
                f"level {self.level}: {res.raw} is a secret file",
                (f"secret: {what}s the secret file {res.raw}",),
                frozenset({Risk.SECRET}),
                secret=True,
                always_ok=False,
            )
        return Evaluation(Action.ALLOW, "policy: inside the workspace")

    def _tool_allowed(self, tool: str) -> bool:
        return any(r.path is None for r in self._rules(Action.ALLOW, tool))

    def tool(self, tool: str, read_only: bool) -> Evaluation:
        """May the agent use this tool at all (tool rules, then the level)?"""
        for action in (Action.DENY, Action.ASK):
            for rule in self._rules(action, tool):
                if rule.path is None:
                    return Evaluation(action, rule.label, always_ok=False)
        if self._tool_allowed(tool):
            return Evaluation(Action.ALLOW, f"rule: allow tool {tool}")
        kind = "read" if read_only else TOOL_KINDS.get(tool, "other")
        if kind in ("read", "notes", "command"):
            return Evaluation(Action.ALLOW, "policy: tool allowed")
        if kind == "lint" and self.sandboxed:  # the user's own lint.enabled, confined
            return Evaluation(Action.ALLOW, "policy: the linters run in the sandbox")
        if self.level is L0 and kind != "lint":
            return Evaluation(Action.DENY, f"level L0: read-only ({tool} is not available)")
        if kind in ("test", "lint") and not self.sandboxed:
            what = "tests" if kind == "test" else "linters"
            return Evaluation(
                Action.ASK,
                f"level {self.level}: no OS sandbox for the {what}",
                (
                    f"exec: no OS sandbox: the project's {what} would run unconfined, with your "
                    "permissions (asked once per task)",
                ),
                frozenset({Risk.EXEC}),
                always_ok=False,
            )
        if kind in ("edit", "test") or self.level is L3:
            return Evaluation(Action.ALLOW, f"level {self.level}: {tool} allowed")
        if self.level is L1:
            return Evaluation(Action.DENY, f"level L1: {tool} is not available")
        return Evaluation(Action.ASK, f"level L2: {tool} has side effects")

    def mcp_call(self, server: str, tool: str, allowed: bool) -> Evaluation:
        """May the agent call `tool` of the MCP server `server`? Deny and ask rules naming
        `mcp_call` or the tool (`mcp__<server>__<tool>`) first; then allowed when `allowed`
        (the server's `allow` list in the user's config names it) or an allow rule names the
        tool, except at L0; otherwise denied at L0 and L1, asked from L2 up (L3 too: the
        server's own hints, read-only or not, are not trusted)."""
        qualified = mcp_tool_name(server, tool)
        for action in (Action.DENY, Action.ASK):
            for name in ("mcp_call", qualified):
                for rule in self._rules(action, name):
                    if rule.path is None:
                        return Evaluation(action, rule.label, always_ok=False)
        if self.level is L0:
            return Evaluation(Action.DENY, "level L0: read-only (MCP tools are not available)")
        if allowed:
            return Evaluation(Action.ALLOW, f"your allow list for the MCP server {server}")
        if self._tool_allowed(qualified):
            return Evaluation(Action.ALLOW, f"rule: allow tool {qualified}")
        if self.level is L1:
            return Evaluation(
                Action.DENY, f"level L1: {qualified} is not available (not in your allow list)"
            )
        return Evaluation(
            Action.ASK,
            f"level {self.level}: an MCP tool does whatever its server can",
            (f"{qualified}: an MCP tool (its server's hints are not trusted)",),
        )

    def hidden(self, tool: str, res: Resolved) -> str | None:
        """Why a listing, a search or the starting context leaves `res` out without asking
        (a deny or ask path rule, a secret file no allow rule lets through, outside the
        workspace); None: `tool` may show it. Listings never ask: what a read would have to
        ask about is hidden."""
        evaluation = self.file(tool, res, write=False)
        return None if evaluation.action is Action.ALLOW else evaluation.rule
