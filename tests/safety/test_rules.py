"""Policy rules: token prefixes (not substrings), paths, tools; deny wins; examples checked on
load; allowlists at L2/L3; destructive commands still ask at L3 without an allow rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_lsp.config.schema import Settings
from agent_lsp.safety.paths import PathGuard
from agent_lsp.safety.risk import Action
from agent_lsp.safety.rules import RuleSet, parse_rules, rules_from_toml
from agent_lsp.safety.setup import build_policy
from tests.safety.conftest import Layout

A, Q, D = Action.ALLOW, Action.ASK, Action.DENY


def rules(layout: Layout, text: str) -> RuleSet:
    import tomllib

    out = parse_rules(tomllib.loads(text), "policy.toml", PathGuard(layout.ws, home=layout.home))
    assert not out.errors, out.errors
    return out


def decide(layout: Layout, ruleset: RuleSet, command: str, level: str = "L2") -> Action:
    return layout.policy(level, ruleset).command(layout.fmt(command)).action


def test_command_prefix_is_token_based(layout: Layout) -> None:
    r = rules(layout, '[[allow]]\ncommand = "pytest"\n[[allow]]\ncommand = "npm run test"\n')
    assert decide(layout, r, "pytest -q tests") is A
    assert decide(layout, r, "pytest") is A
    assert decide(layout, r, "pytest-watch") is Q  # not a substring match
    assert decide(layout, r, "python -m pytest", "L0") is D  # not matched: no lift at L0 ...
    assert decide(layout, r, "python -m pytest --pdbcls=x:y") is Q  # ... nor of an unknown option
    assert decide(layout, r, "npm run test -- --watch") is A
    assert decide(layout, r, "npm run testing") is Q
    assert decide(layout, r, "npm run") is Q
    assert decide(layout, r, "./pytest") is Q  # a program of the same name elsewhere
    assert decide(layout, r, "timeout 60 pytest -q") is A  # plain wrappers keep the meaning
    assert decide(layout, r, "X=1 pytest") is Q  # an environment prefix does not
    assert decide(layout, r, "env PYTEST_ADDOPTS=-x pytest") is Q
    assert decide(layout, r, "pytest; curl https://x.example") is Q  # every part must pass


def test_an_allow_rule_does_not_cover_secrets_or_undecidable_parts(layout: Layout) -> None:
    r = rules(layout, '[[allow]]\ncommand = "cat"\n[[allow]]\ncommand = "cat .env"\n')
    assert decide(layout, r, "cat README.md") is A
    assert decide(layout, r, "cat ~/.ssh/id_rsa") is Q  # the path is not in the rule
    assert decide(layout, r, "cat .env") is A  # ... this one is
    assert decide(layout, r, "cat $X") is Q


def test_deny_wins_over_allow_and_matches_through_wrappers(layout: Layout) -> None:
    r = rules(
        layout,
        '[[allow]]\ncommand = "git push"\n[[deny]]\ncommand = "git push"\n'
        '[[allow]]\ncommand = "npm"\n[[deny]]\ncommand = "npm publish"\n',
    )
    for command in [
        "git push",
        "git -C . push origin",
        "/usr/bin/git push",
        "env git push",
        "sudo git push",
        "timeout 9 git push",
        "ls && git push",
        "bash -c 'git push'",
        "echo $(git push)",
    ]:
        assert decide(layout, r, command, "L3") is D, command
    assert decide(layout, r, "npm install", "L3") is A
    assert decide(layout, r, "npm publish --tag x", "L3") is D


def test_ask_rules(layout: Layout) -> None:
    r = rules(layout, '[[ask]]\ncommand = "git status"\n[[ask]]\npath = "docs/**"\n')
    assert decide(layout, r, "git status") is Q
    assert decide(layout, r, "git log") is A
    assert decide(layout, r, "cat docs/x.md") is Q
    assert decide(layout, r, "git status", "L0") is D  # git is not vetted: L0 runs none of it


def test_path_rules(layout: Layout) -> None:
    r = rules(
        layout,
        '[[deny]]\npath = "config/**"\n[[allow]]\npath = "/usr/share/**"\n'
        '[[allow]]\npath = ".env.example"\n',
    )
    assert decide(layout, r, "cat config/server.pem") is D
    assert decide(layout, r, "ls config") is D
    assert decide(layout, r, "grep -r BEGIN .") is D  # a recursive read reaches config/
    assert decide(layout, r, "cat config/*") is D
    assert decide(layout, r, "cat /usr/share/dict/words") is A
    assert decide(layout, r, "cat /usr/lib/os-release") is Q
    assert decide(layout, r, "cat .env.example", "L1") is A
    assert decide(layout, r, "cat .env", "L1") is Q


def test_tool_rules(layout: Layout) -> None:
    r = rules(layout, '[[deny]]\ntool = "run_command"\n[[ask]]\ntool = "write_file"\n')
    policy = layout.policy("L2", r)
    assert policy.command("ls").action is D
    assert policy.tool("write_file", read_only=False).action is Q
    assert policy.tool("edit_file", read_only=False).action is A
    assert policy.tool("read_file", read_only=True).action is A


def test_levels_for_tools(layout: Layout) -> None:
    def tool(level: str, name: str, read_only: bool = False) -> Action:
        return layout.policy(level).tool(name, read_only).action

    assert [tool(lv, "edit_file") for lv in ("L0", "L1", "L2", "L3")] == [D, A, A, A]
    assert [tool(lv, "run_tests") for lv in ("L0", "L1", "L2", "L3")] == [D, A, A, A]
    assert [tool(lv, "read_file", True) for lv in ("L0", "L1", "L2", "L3")] == [A, A, A, A]
    assert [tool(lv, "remember") for lv in ("L0", "L1", "L2", "L3")] == [A, A, A, A]
    assert [tool(lv, "new_tool") for lv in ("L0", "L1", "L2", "L3")] == [D, D, Q, A]
    r = rules(layout, '[[allow]]\ntool = "edit_file"\n')
    assert layout.policy("L0", r).tool("edit_file", False).action is A


DESTRUCTIVE = ["rm -rf build", "git checkout -- .", "git branch -D x", "git clean -fd"]


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_destructive_asks_even_at_l3_unless_allowlisted(layout: Layout, command: str) -> None:
    plain = rules(layout, '[[allow]]\ncommand = "pytest"\n')
    assert decide(layout, plain, command, "L3") is Q
    words = command.split()
    listed = rules(layout, f'[[allow]]\ncommand = "{" ".join(words[:2])}"\n')
    assert decide(layout, listed, command, "L3") is A
    assert decide(layout, listed, command, "L1") is D  # the level caps what a rule can do


@pytest.mark.parametrize("command", ["git push --force", "rm -rf .git", "git reset --hard"])
def test_forbidden_runs_only_when_allowlisted(layout: Layout, command: str) -> None:
    assert decide(layout, RuleSet(), command, "L3") is D
    r = rules(layout, f'[[allow]]\ncommand = "{command}"\n')
    assert decide(layout, r, command, "L2") is A
    assert decide(layout, r, command, "L0") is D


def test_l3_runs_workspace_writes_and_allowlisted_commands(layout: Layout) -> None:
    r = rules(layout, '[[allow]]\ncommand = "pytest"\n')
    assert decide(layout, r, "touch x && pytest -q", "L3") is A
    assert decide(layout, r, "make", "L3") is Q
    assert decide(layout, r, "echo $(", "L3") is D


def test_examples_are_checked_when_the_policy_loads(layout: Layout) -> None:
    import tomllib

    text = (
        '[[allow]]\ncommand = "pytest"\nexamples = ["pytest -q", "python -m pytest"]\n'
        '[[deny]]\ncommand = "git push"\nnot_examples = ["git push --dry-run"]\n'
        '[[allow]]\ncommand = "ruff check"\nexamples = ["ruff check ."]\n'
        'not_examples = ["ruff format ."]\n'
        '[[ask]]\npath = "*.sql"\nexamples = ["db/x.sql"]\nnot_examples = ["db/x.py"]\n'
    )
    out = parse_rules(tomllib.loads(text), "policy.toml", PathGuard(layout.ws, home=layout.home))
    assert out.errors == [
        "policy.toml allow #1: allow command 'pytest': example 'python -m pytest' does not match",
        "policy.toml deny #1: deny command 'git push': counter-example 'git push --dry-run' "
        "matches",
    ]
    kept = [r.label for r in out.rules]
    assert kept == [  # the failing allow rule is dropped, the failing deny rule kept
        "policy.toml allow #2: allow command 'ruff check'",
        "policy.toml ask #1: ask path '*.sql'",
        "policy.toml deny #1: deny command 'git push'",
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[[allow]]\ncommand = "ls; rm x"\n', "one plain command"),
        ('[[allow]]\ncommand = "ls $X"\n', "plain words"),
        ("[[allow]]\nreason = 'x'\n", "needs a command, a path or a tool"),
        ('[[allow]]\ntool = "run_command"\n', "would allow every command"),
        ('[[deny]]\ncommand = "x"\npath = "y"\n', "cannot also name"),
        ('[[deny]]\ncomand = "x"\n', "unknown keys comand"),
        ('[[allow]]\ncommand = "x"\nnetwork = "yes"\n', "network must be"),
        ('allow = "x"\n', "must be an array of tables"),
    ],
)
def test_malformed_rules_are_errors(layout: Layout, text: str, error: str) -> None:
    import tomllib

    out = parse_rules(tomllib.loads(text), "p", PathGuard(layout.ws, home=layout.home))
    assert any(error in e for e in out.errors), out.errors


def test_a_broken_policy_file_fails_closed(layout: Layout) -> None:
    (layout.ws / ".agent-lsp/policy.toml").write_text("[[deny]\ncommand = ")
    guard = PathGuard(layout.ws, home=layout.home)
    loaded = rules_from_toml(layout.ws / ".agent-lsp/policy.toml", "policy.toml", guard)
    assert loaded.broken and loaded.errors
    assert decide(layout, loaded, "ls") is Q  # nothing runs unasked
    assert decide(layout, loaded, "rm -rf /") is D


def test_allow_rules_may_grant_the_network(layout: Layout) -> None:
    r = rules(
        layout, '[[allow]]\ncommand = "pytest"\nnetwork = true\n[[allow]]\ncommand = "make"\n'
    )
    assert layout.policy("L2", r).command("pytest -q").network
    assert not layout.policy("L2", r).command("make").network
    assert layout.policy("L2", r).command("curl https://x.example").network


def settings(**data: object) -> Settings:
    return Settings.model_validate(data)


def test_build_policy_merges_user_and_project_rules_and_gates_trust(
    layout: Layout, tmp_path: Path
) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[policy]\n[[policy.allow]]\ncommand = "make"\n')
    (layout.ws / ".agent-lsp/policy.toml").write_text(
        '[[allow]]\ncommand = "curl"\n[[deny]]\ncommand = "make clean"\n'
    )
    untrusted = build_policy(
        layout.ws, settings(), user_config=user, trusted=False, home=layout.home
    )
    assert untrusted.engine.command("make").action is A
    assert untrusted.engine.command("make clean").action is D  # deny rules always count
    assert untrusted.engine.command("curl https://x.example").action is Q
    assert any("allow command 'curl': ignored until you trust" in m for m in untrusted.messages)
    trusted = build_policy(layout.ws, settings(), user_config=user, trusted=True, home=layout.home)
    assert trusted.engine.command("curl https://x.example").action is A
    assert trusted.messages == []


def test_l3_needs_an_allowlist(layout: Layout, tmp_path: Path) -> None:
    none = tmp_path / "none.toml"
    setup = build_policy(
        layout.ws, settings(permissionLevel="L3"), user_config=none, trusted=False, home=layout.home
    )
    assert setup.engine.level.value == "L2"
    assert any("L3 needs an explicit allowlist" in m for m in setup.messages)
    none.write_text('[[policy.allow]]\ncommand = "pytest"\n')
    setup = build_policy(
        layout.ws, settings(permissionLevel="L3"), user_config=none, trusted=False, home=layout.home
    )
    assert setup.engine.level.value == "L3" and setup.messages == []


def test_a_broad_allow_rule_never_lifts_a_forbidden_command(layout: Layout) -> None:
    """`[[allow]] command = "git"` allows git, not `git reset --hard` spelled any way: only a
    rule that names the forbidden form itself lifts it."""
    r = rules(layout, '[[allow]]\ncommand = "git"\n[[allow]]\ncommand = "git push --force"\n')
    for command in ["git reset --ha", "git reset --hard", "git clean --forc -x", "git clean -fdx"]:
        assert decide(layout, r, command, "L3") is D, command
    assert decide(layout, r, "git config core.fsmonitor x", "L3") is D
    assert decide(layout, r, "git status", "L3") is A
    assert decide(layout, r, "git push --force origin main", "L3") is A  # named by the rule
    assert decide(layout, r, "git push --force-w origin main", "L3") is D  # not spelled so
