"""Policy rules: allow / ask / deny by command prefix (whole tokens), by path (a glob) or by
tool, each optionally carrying examples it must match and must not match, checked on load.

The same format in `.agent-lsp/policy.toml` and under `[policy]` in the user's config::

    [[allow]]
    command = "pytest"
    examples = ["pytest -q tests/test_calc.py"]
    not_examples = ["pytest-watch", "python -m pytest"]

    [[deny]]
    path = "secrets/**"
    tools = ["read_file", "run_command"]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_lsp.safety.paths import PathError, PathGuard, Resolved
from agent_lsp.safety.risk import Action
from agent_lsp.safety.shellparse import parse

__all__ = ["Rule", "RuleSet", "glob_regex", "parse_rules"]

_KEYS = frozenset(
    {"command", "path", "tool", "tools", "examples", "not_examples", "notExamples", "reason"}
    | {"network"}
)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` any depth, `*` and `?` within one name, `[...]` a character class; `dir/**` also
    matches the folder itself."""
    if pattern.endswith("/**"):
        return re.compile(glob_regex(pattern[:-3]).pattern.removesuffix("/?") + "(?:/.*)?/?")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            negate = body[0] in "!^"
            body = re.sub(r"([\\\]\[^])", r"\\\1", body[1:] if negate else body)
            out.append("[" + ("^" if negate else "") + body + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + "/?")


@dataclass(frozen=True)
class Rule:
    action: Action
    source: str  # e.g. "policy.toml allow #2"
    command: tuple[str, ...] | None = None
    path: str | None = None
    tools: frozenset[str] | None = None  # None: every tool
    examples: tuple[str, ...] = ()
    not_examples: tuple[str, ...] = ()
    reason: str = ""
    network: bool = False
    _regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        what = (
            f"command {' '.join(self.command)!r}"
            if self.command is not None
            else f"path {self.path!r}"
            if self.path is not None
            else f"tool {', '.join(sorted(self.tools or ()))}"
        )
        if self.path is not None and self.tools:
            what += f" for {', '.join(sorted(self.tools))}"
        return f"{self.source}: {self.action.value} {what}"

    def for_tool(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def prefix(self, argv: Sequence[str]) -> bool:
        return self.command is not None and tuple(argv[: len(self.command)]) == self.command

    def matches_path(self, res: Resolved, guard: PathGuard) -> bool:
        if self.path is None:
            return False
        regex = self._regex or glob_regex(self.path)
        forms: list[str] = [res.path.as_posix()]
        for top in guard.roots:
            if res.path.is_relative_to(top):
                forms.append(res.path.relative_to(top).as_posix())
        if "/" not in self.path.rstrip("/"):
            forms.append(res.path.name)
        return any(regex.fullmatch(f) for f in forms)


@dataclass
class RuleSet:
    rules: list[Rule] = field(default_factory=list[Rule])
    errors: list[str] = field(default_factory=list[str])
    broken: bool = False  # a policy file could not be read: fail closed
    unreadable: bool = False  # not read at all (the file, or its TOML syntax)

    def of(self, action: Action) -> Iterable[Rule]:
        return (r for r in self.rules if r.action is action)

    @property
    def has_allowlist(self) -> bool:
        return any(r.action is Action.ALLOW and r.command is not None for r in self.rules)


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(str(v) for v in value)  # pyright: ignore[reportUnknownArgumentType]
    raise ValueError(f"{key} must be a string or a list of strings")


def _command_tokens(text: str) -> tuple[str, ...]:
    script = parse(text)
    if script.problems or len(script.commands) != 1:
        raise ValueError(f"command {text!r} must be one plain command (no operators)")
    cmd = script.commands[0]
    if cmd.redirects or not all(w.static for w in cmd.words):
        raise ValueError(f"command {text!r} must be plain words")
    return tuple([f"{n}={w.value}" for n, w in cmd.assigns] + [w.value for w in cmd.words])


def _one(action: Action, item: Mapping[str, Any], source: str) -> Rule:
    unknown = set(item) - _KEYS
    if unknown:
        raise ValueError(f"unknown keys {', '.join(sorted(unknown))}")
    tools: frozenset[str] | None = None
    if "tool" in item or "tools" in item:
        tools = frozenset(_strings(item.get("tools", item.get("tool")), "tools"))
    command = _command_tokens(str(item["command"])) if "command" in item else None
    path = str(item["path"]) if "path" in item else None
    if command is not None and (path is not None or tools is not None):
        raise ValueError("a command rule cannot also name a path or tools")
    if command is None and path is None and tools is None:
        raise ValueError("a rule needs a command, a path or a tool")
    if action is Action.ALLOW and path is None and tools and "run_command" in tools:
        raise ValueError("allow for the tool run_command would allow every command; use commands")
    network = item.get("network", False)
    if not isinstance(network, bool):
        raise ValueError("network must be true or false")
    return Rule(
        action=action,
        source=source,
        command=command,
        path=path,
        tools=tools,
        examples=_strings(item.get("examples", []), "examples"),
        not_examples=_strings(item.get("not_examples", item.get("notExamples", [])), "examples"),
        reason=str(item.get("reason", "")),
        network=network,
        _regex=glob_regex(path) if path is not None else None,
    )


def parse_rules(data: Mapping[str, Any], source: str, guard: PathGuard) -> RuleSet:
    """The rules under `allow`, `ask` and `deny`; a rule that fails its own examples is an
    error — an allow rule is then dropped, a deny or ask rule kept (it only restricts)."""
    out = RuleSet()
    for action in Action:
        items = data.get(action.value, [])
        if not isinstance(items, list):
            out.errors.append(f"{source}: {action.value} must be an array of tables ([[{action}]])")
            out.broken = True
            continue
        for n, item in enumerate(items, 1):  # pyright: ignore[reportUnknownVariableType]
            where = f"{source} {action.value} #{n}"
            if not isinstance(item, Mapping):
                out.errors.append(f"{where}: not a table")
                out.broken = out.broken or action is not Action.ALLOW
                continue
            try:
                rule = _one(action, item, where)  # pyright: ignore[reportUnknownArgumentType]
            except (ValueError, KeyError) as exc:
                out.errors.append(f"{where}: {exc}")
                out.broken = out.broken or action is not Action.ALLOW
                continue
            failures = check_examples(rule, guard)
            out.errors.extend(f"{rule.label}: {f}" for f in failures)
            if failures and action is Action.ALLOW:
                continue
            out.rules.append(rule)
    return out


def rule_matches_text(rule: Rule, text: str, guard: PathGuard) -> bool:
    """Whether a rule matches an example: a command line, a path or a tool name."""
    if rule.command is not None:
        from agent_lsp.safety.classify import Classifier

        parts = Classifier(guard).analyze(text).parts
        forms = [p.argv for p in parts] + [p.core for p in parts]
        return any(rule.prefix(f) for f in forms)
    if rule.path is not None:
        try:
            return rule.matches_path(guard.resolve(text), guard)
        except PathError:
            return False
    return rule.tools is not None and text in rule.tools


def check_examples(rule: Rule, guard: PathGuard) -> list[str]:
    failures = [f"example {e!r} does not match" for e in rule.examples]
    failures = [
        f
        for e, f in zip(rule.examples, failures, strict=True)
        if not rule_matches_text(rule, e, guard)
    ]
    failures += [
        f"counter-example {e!r} matches"
        for e in rule.not_examples
        if rule_matches_text(rule, e, guard)
    ]
    return failures


def rules_from_toml(path: Path, source: str, guard: PathGuard, table: str | None = None) -> RuleSet:
    """Rules of a TOML file (`table`: the sub-table that holds them, e.g. "policy")."""
    import tomllib

    if not path.is_file():
        return RuleSet()
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
    except (OSError, ValueError) as exc:  # ValueError: TOML syntax, or not UTF-8
        return RuleSet(errors=[f"{source}: {exc}"], broken=True, unreadable=True)
    if table is not None:
        sub = data.get(table, {})
        if not isinstance(sub, dict):
            return RuleSet(errors=[f"{source}: [{table}] must be a table"], broken=True)
        data = sub  # pyright: ignore[reportUnknownVariableType]
    return parse_rules(data, source, guard)
