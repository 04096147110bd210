"""What a settings layer the user did not write (the project's config before the workspace is
trusted; editor settings sent after start-up) may set: it may always restrict, never widen."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Literal, cast

from agent_lsp.config.testargs import unsafe_test_args

ROUTE_KINDS = ("explain", "suggestions", "fix", "task", "distillation")


# A repository's own config and the editor never set the API key; a repository never names
# the variable a route's key is read from.
PROJECT_FORBIDDEN = (
    ("model", "apiKey"),
    *(("model", "routes", kind, "apiKeyEnv") for kind in ROUTE_KINDS),
)


EDITOR_FORBIDDEN = (("model", "apiKey"),)


LEVELS = ("L0", "L1", "L2", "L3")


UNTRUSTED_WHY = "until you trust this workspace (agent-lsp trust)"


LATER = "editor settings sent after start-up"


# What an untrusted layer (the project's config; settings the editor sends after start-up) may
# do with a key, measured against the user's own value: `free` anything; `off`/`on` only turn
# it off/on; `stricter` a value earlier in STRICTEST_FIRST; `subset` only drop entries; `same`
# (every key not listed: all of model.*, whatever is added later) change nothing; `args` test
# runner arguments that neither write files nor name paths outside the workspace; `never` not
# even once trusted (`mcp.*`: only the user file). It may always restrict, never widen.
Rule = Literal["free", "same", "off", "on", "stricter", "subset", "args", "never"]


UNTRUSTED_RULES: dict[tuple[str, ...], Rule] = {
    ("applyMode",): "stricter",
    ("maxSteps",): "free",
    ("maxAttempts",): "free",
    ("toolTimeout",): "free",
    ("editTimeout",): "free",
    ("maxTokens",): "free",
    ("askTimeout",): "free",
    ("tests", "timeout"): "free",
    # the tests run the repository's code in the sandbox anyway (conftest.py, package.json's
    # scripts.test and pytest.ini's addopts are the repository's to write), but an argument
    # of the runner acts outside it where there is no sandbox: no paths outside the workspace,
    # no options that write files (`agent_lsp.config.testargs`)
    ("tests", "args"): "args",
    # likewise the test command: it runs where scripts.test would, in the shadow copy under
    # the sandbox (without an OS sandbox the one gate asks before the project's code runs)
    ("tests", "command"): "free",
    ("memory", "maxInjected"): "free",
    ("memory", "initStepTimeout"): "free",
    ("permissionLevel",): "stricter",
    ("extraRoots",): "subset",
    ("sandbox", "passEnv"): "subset",
    ("sandbox", "enabled"): "on",
    ("sandbox", "network"): "off",
    ("tests", "runOnSave"): "off",
    ("lint", "enabled"): "off",
    ("suggestions", "enabled"): "off",
    ("memory", "distill"): "off",
    ("memory", "inject"): "off",
    ("compaction", "fix"): "free",
    ("compaction", "task"): "free",
    ("compaction", "explain"): "free",
    ("compaction", "summarise"): "off",
    ("team", "enabled"): "free",  # team mode widens no permission; its budget is bounded
    ("team", "workers"): "free",
    ("team", "reviewRounds"): "free",
    ("team", "budgetTokens"): "free",
    ("team", "budgetSeconds"): "free",
    ("team", "progress"): "free",
    ("team", "shares"): "free",
}


STRICTEST_FIRST: dict[tuple[str, ...], tuple[str, ...]] = {
    ("permissionLevel",): LEVELS,
    ("applyMode",): ("review", "direct"),  # a proposal to accept is stricter than an edit
}


def untrusted_rule(path: tuple[str, ...]) -> Rule:
    """What an untrusted layer may do with the key at `path` (see UNTRUSTED_RULES)."""
    if path[:2] == ("team", "shares"):  # a role's share: bounded by the task's budget
        return "free"
    if path[:1] == ("mcp",):
        return "never"
    return UNTRUSTED_RULES.get(path, "same")


# Names a sandbox passes only when the user listed them in their own settings.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|CREDENTIAL|AUTH|SESSION|COOKIE", re.I
)


def as_table(value: object) -> dict[str, Any] | None:
    """`value` as a settings table (TOML and JSON tables have string keys), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def as_list(value: object) -> list[Any] | None:
    return cast("list[Any]", value) if isinstance(value, list) else None


def strip_forbidden(
    layer: dict[str, Any], keys: tuple[tuple[str, ...], ...], warnings: list[str], src: str
) -> None:
    for path in keys:
        node: Any = layer
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            warnings.append(f"{src}: ignored {'.'.join(path)} (not allowed from here)")


MCP_ONLY_YOURS = (
    "MCP servers come only from your user config (~/.config/agent-lsp/config.toml) or an ACP "
    "client's session/new, never from here; nothing of it was started"
)


def strip_mcp(layer: dict[str, Any], warnings: list[str], src: str) -> None:
    """A layer that is not the user file (a project's config, trusted or not; editor settings)
    never adds or changes an MCP server: its `mcp` table goes, said once."""
    if "mcp" in layer:
        del layer["mcp"]
        warnings.append(f"{src}: ignored [mcp]: {MCP_ONLY_YOURS}")


def keeps(path: tuple[str, ...], value: Any, mine: Any) -> bool:
    """May an untrusted layer set `value` at `path` where the user's own settings give `mine`?"""
    rule = untrusted_rule(path)
    if rule == "never":
        return False
    if rule == "free" or value == mine:
        return True
    if rule == "off":
        return value is False
    if rule == "on":
        return value is True
    if rule == "stricter":
        order = STRICTEST_FIRST[path]
        return value in order and mine in order and order.index(value) <= order.index(mine)
    if rule == "args":
        entries = as_list(value)
        return entries is not None and unsafe_test_args([str(v) for v in entries]) is None
    if rule == "subset":
        entries, own = as_list(value), as_list(mine)
        return entries is not None and own is not None and all(v in own for v in entries)
    return False


def guard(
    layer: dict[str, Any],
    mine: Mapping[str, Any],
    keep: Mapping[str, Any] | None = None,
    at: tuple[str, ...] = (),
) -> list[str]:
    """Drop from `layer` what widens the user's own settings `mine` (putting back the value
    `keep` has, the editor's start-up options); the dropped keys."""
    dropped: list[str] = []
    for key in list(layer):
        value, ref, here = layer[key], mine.get(key, mine), (*at, key)
        if ref is mine:  # not a setting (ignored anyway)
            continue
        table, own = as_table(value), as_table(ref)
        if table is not None and own is not None:
            dropped += guard(table, own, as_table(keep.get(key)) if keep else None, here)
        elif not keeps(here, value, ref):
            del layer[key]
            if keep is not None and key in keep:
                layer[key] = copy.deepcopy(keep[key])
            dropped.append(".".join(here))
    return dropped


def confine(
    layer: dict[str, Any],
    mine: Mapping[str, Any],
    trusted: bool,
    warnings: list[str],
    src: str,
    keep: Mapping[str, Any] | None = None,
) -> None:
    """A layer the user did not write: widening keys only once trusted, and never a
    secret-looking name in `sandbox.passEnv` the user did not list themselves."""
    if not trusted:
        warnings.extend(f"{src}: ignored {key} {UNTRUSTED_WHY}" for key in guard(layer, mine, keep))
    sandbox = as_table(layer.get("sandbox"))
    names = as_list(sandbox.get("passEnv")) if sandbox is not None else None
    if sandbox is not None and names is not None:
        own = mine["sandbox"]["passEnv"]
        secret = [n for n in names if isinstance(n, str) and SECRET_NAME.search(n)]
        secret = [n for n in secret if n not in own]
        sandbox["passEnv"] = [n for n in names if n not in secret]
        warnings.extend(
            f"{src}: ignored sandbox.passEnv {n} (a secret by its name: only your own settings "
            "pass it)"
            for n in secret
        )


def only_restricts(path: tuple[str, ...], value: Any, mine: Any) -> bool:
    """Does `value` at `path` keep or restrict `mine` (what an untrusted layer may set)?"""
    return keeps(path, value, mine)
