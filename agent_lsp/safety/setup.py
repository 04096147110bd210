"""Builds the safety policy of a workspace from the settings, the user's config and the
project's `.agent-lsp/policy.toml` — the same for the LSP server and `agent-lsp run`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.config.schema import PermissionLevel, Settings
from agent_lsp.config.settings import USER_CONFIG
from agent_lsp.config.trust import TrustStore
from agent_lsp.safety.engine import SafetyPolicy
from agent_lsp.safety.paths import PathGuard, Resolved
from agent_lsp.safety.risk import Action
from agent_lsp.safety.rules import RuleSet, rules_from_toml
from agent_lsp.safety.sandbox import Sandbox

__all__ = ["POLICY_FILE", "PolicySetup", "build_policy", "extra_roots"]

POLICY_FILE = Path(".agent-lsp/policy.toml")
_TRUST_HINT = "until you trust this workspace (agent-lsp trust)"


@dataclass
class PolicySetup:
    engine: SafetyPolicy
    sandbox: Sandbox
    messages: list[str] = field(default_factory=list[str])  # show each to the user once
    trusted: bool = False


def extra_roots(root: Path, settings: Settings) -> list[Path]:
    out: list[Path] = []
    for text in settings.extra_roots:
        p = Path(text).expanduser()
        out.append(p if p.is_absolute() else root / p)
    return out


def denied_paths(rules: RuleSet, guard: PathGuard) -> Callable[[str], bool] | None:
    """The deny path rules for commands, as the sandbox applies them: what they name is
    hidden from every program, whatever the classifier made of the command."""
    denied = [
        r
        for r in rules.of(Action.DENY)
        if r.path is not None and r.command is None and r.for_tool("run_command")
    ]
    if not denied:
        return None

    def hidden(path: str) -> bool:  # walked, not followed: the path is already resolved
        res = Resolved(path, Path(path), True, True, False, False, False, False)
        return any(rule.matches_path(res, guard) for rule in denied)

    return hidden


def build_policy(
    root: Path,
    settings: Settings,
    *,
    user_config: Path | None = None,
    trusted: bool | None = None,
    home: Path | None = None,
) -> PolicySetup:
    """The rules of the user's config (`[policy]`) and of the project's policy file; the
    project's allow rules count only in a trusted workspace. L3 without an allowlist is L2."""
    root = root.resolve()
    user_path = (user_config or USER_CONFIG).expanduser()
    if trusted is None:
        trusted = TrustStore(user_path.parent / "trusted.toml").is_trusted(root)
    roots = extra_roots(root, settings)
    guard = PathGuard(root, roots, home)
    user = rules_from_toml(user_path, f"user config {user_path}", guard, table="policy")
    project = rules_from_toml(root / POLICY_FILE, POLICY_FILE.as_posix(), guard)
    # A user config that cannot be read at all is reported once, by load_settings.
    messages = [*([] if user.unreadable else user.errors), *project.errors]
    kept = project.rules
    if not trusted:
        kept = [r for r in project.rules if r.action is not Action.ALLOW]
        messages += [f"{r.label}: ignored {_TRUST_HINT}" for r in project.rules if r not in kept]
    rules = RuleSet([*user.rules, *kept], messages.copy(), user.broken or project.broken)
    level = settings.permission_level
    if level is PermissionLevel.L3 and not rules.has_allowlist:
        messages.append(
            "permissionLevel L3 needs an explicit allowlist ([[allow]] command rules in "
            f"{POLICY_FILE.as_posix()} or the user config); using L2"
        )
        level = PermissionLevel.L2
    sandbox = Sandbox(
        enabled=settings.sandbox.enabled,
        network=settings.sandbox.network,
        extra_writable=tuple(roots),
        home=home or Path.home(),
        pass_env=tuple(settings.sandbox.pass_env),
    )
    sandbox.hide = denied_paths(rules, guard)
    if notice := sandbox.notice():  # once per process and reason
        messages.append(notice)
    status = sandbox.status()
    engine = SafetyPolicy(
        root, level, rules, roots, home, sandboxed=status.available, trusted=trusted
    )
    return PolicySetup(engine, sandbox, messages, trusted)
