"""The settings tree: every section and key with its type, default, bounds and description (the one
schema the configuration reference and the VS Code settings are generated from)."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    field_validator,
)
from pydantic.alias_generators import to_camel


class _Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", validate_default=True
    )


DEFAULT_CONTEXT_WINDOW = 128_000  # when neither `model.contextWindow` nor the server says

EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class ToolCalling(StrEnum):
    AUTO = "auto"
    NATIVE = "native"
    TEXT = "text"


class ModelProfile(StrEnum):
    AUTO = "auto"
    FULL = "full"
    SMALL = "small"


class CheckAfterEdit(StrEnum):
    AUTO = "auto"
    ON = "on"
    OFF = "off"


class ModelPrice(_Section):
    input: float | None = Field(
        None, ge=0, description="USD per million prompt tokens (for the cost in the summary)."
    )
    output: float | None = Field(
        None, ge=0, description="USD per million completion tokens (for the cost in the summary)."
    )

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        """USD for these tokens; None unless both prices are set."""
        if self.input is None or self.output is None:
            return None
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


class ModelRoute(_Section):
    """One task kind's model: a name, and optionally its own endpoint."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )

    name: str = Field(min_length=1, description="Model name sent to the endpoint.")
    base_url: str | None = Field(
        None, description="Its endpoint; unset: the main model's (`model.baseUrl`)."
    )
    api_key_env: EnvName | None = Field(
        None,
        description="The environment variable holding its API key. Unset: the main model's "
        "key on the main endpoint, no key on another one.",
    )
    max_tokens: int | None = Field(
        None, ge=16, le=1_000_000, description="Its output cap; unset: `model.maxTokens`."
    )


_ROUTE = (
    ": a table with `name`, optionally `baseUrl` (unset: `model.baseUrl`), `apiKeyEnv` (the "
    "environment variable holding its key; unset: the main key on the main endpoint, no key "
    "on another) and `maxTokens`. Unset: the main model."
)


class ModelRoutes(_Section):
    explain: ModelRoute | None = Field(None, description="The model of `explain` tasks" + _ROUTE)
    suggestions: ModelRoute | None = Field(
        None, description="The model of background suggestions" + _ROUTE
    )
    fix: ModelRoute | None = Field(None, description="The model of `fix` tasks" + _ROUTE)
    task: ModelRoute | None = Field(None, description="The model of free-text tasks" + _ROUTE)
    distillation: ModelRoute | None = Field(
        None,
        description="The model that distils experiences after a task and the user's "
        "remember" + _ROUTE,
    )


class ModelSettings(_Section):
    base_url: str = Field(
        "https://api.openai.com/v1",
        description="OpenAI-compatible endpoint (OpenAI, DeepSeek, Ollama, vLLM, llama.cpp ...).",
    )
    name: str = Field("gpt-4o-mini", description="Model name sent to the endpoint.")
    api_key: SecretStr | None = Field(
        None,
        description="API key. Only read from the environment or the user config file, never "
        "from a project or the editor.",
        exclude=True,
    )
    timeout: float = Field(120.0, gt=0, description="Seconds to wait for one model call.")
    max_retries: int = Field(
        2, ge=0, le=10, description="Retries on 429, 5xx and timeouts (Retry-After is respected)."
    )
    stream: bool = Field(True, description="Stream replies, so that cancelling a task is prompt.")
    max_tokens: int = Field(
        4096,
        ge=16,
        le=1_000_000,
        description="Output cap of one model call (sent as `max_tokens`); a reply cut there is "
        "reported as cut, in the log and to the model.",
    )
    temperature: float | None = Field(
        0.0, description="Sampling temperature; null = endpoint default."
    )
    context_window: int | None = Field(
        None,
        ge=2_000,
        description="Tokens the model accepts; history is compacted at the share the "
        "`compaction` settings give each task kind. Unset: what the server says (llama.cpp's "
        "`/props`, Ollama's `/api/show`, or learned from its context-length error; remembered "
        "per endpoint and model in `~/.local/state/agent-lsp/servers.json`), else 128000.",
    )
    price: ModelPrice = Field(
        default_factory=lambda: ModelPrice.model_validate({}),
        description="The model's price, for the cost in a task's summary: "
        "`[model] price = {input = 0.15, output = 0.6}` (USD per million tokens).",
    )
    tool_calling: ToolCalling = Field(
        ToolCalling.AUTO,
        description="`native` tool calls, `text` (tools described in the prompt, for models "
        "without tool calling), or `auto` (native, switching to text if the endpoint refuses).",
    )
    profile: ModelProfile = Field(
        ModelProfile.AUTO,
        description="`small`: the harness made for models of a few billion parameters (a short "
        "system prompt, six tools, the tests run and the files that matter shown in the first "
        "message, edits written in words accepted, the affected tests run after every edit, "
        "earlier compaction); `full`: the whole tool set; `auto`: small when the served context "
        "window is 16k tokens or less or the model's name says 8B parameters or fewer.",
    )
    routes: ModelRoutes = Field(
        default_factory=lambda: ModelRoutes.model_validate({}),
        description="Other models for some task kinds, e.g. "
        '`[model.routes.explain] name = "qwen2.5-coder:7b", baseUrl = "http://localhost:11434/v1"`'
        "; on a connection error, an HTTP 5xx or an unknown model the main model answers "
        "instead (said in the session log). Only from your own settings.",
    )


class ApplyMode(StrEnum):
    DIRECT = "direct"
    REVIEW = "review"


class PermissionLevel(StrEnum):
    L0 = "L0"
    L1 = "L1"
    L2 = "L2"
    L3 = "L3"


class SuggestionSettings(_Section):
    enabled: bool = Field(
        False,
        description="Prepare fixes in the background for new diagnostics (after a 2 s pause, "
        "at most 10 an hour, never while a task runs) and offer each as a code action "
        "carrying the edit.",
    )


class TestSettings(_Section):
    run_on_save: bool = Field(False, description="Run the project's tests when a file is saved.")
    timeout: float = Field(300.0, gt=0, description="Seconds before a test run is killed.")
    args: list[str] = Field(
        [],
        description="Extra arguments given to the project's test runner on every run (pytest, "
        "Django's manage.py test, jest, vitest, node --test, go test), after agent-lsp's own "
        'options and before the targets, each as one argument, e.g. ["-p", "no:randomly"].',
    )
    command: str = Field(
        "",
        description="The command that runs the project's tests, for a runner agent-lsp does "
        "not detect (a wrapper script, a Makefile target); it replaces detection. A command "
        "running jest, vitest or node --test is read like package.json's scripts.test (results "
        'per test, e.g. "jest -c config/jest.config.js"); any other is judged by its exit '
        "code. It runs in the shadow copy, under the sandbox like every test run; a "
        "repository's own config sets it only there.",
    )

    check_after_edit: CheckAfterEdit = Field(
        CheckAfterEdit.AUTO,
        description="Run the tests affected by an edit right after it, their verdict joining the "
        "edit's result: `on`, `off`, or `auto` (with the small-model profile, `model.profile`).",
    )


class LintSettings(_Section):
    enabled: bool = Field(
        False,
        description="Run the project's linters and compilers (ruff or pyflakes, go vet, tsc) on "
        "open and save, on the editor's text, and publish what they find as diagnostics.",
    )


class MemorySettings(_Section):
    distill: bool = Field(
        True,
        description="After a key event (fail -> fix -> pass, a stack change, the user's "
        "remember), one extra model call writes an experience file under .agent-lsp/memory/.",
    )
    inject: bool = Field(
        True, description="Give each task the most relevant experiences (at most 300 words)."
    )
    max_injected: int = Field(5, ge=0, le=10, description="Most experiences given to a task.")
    init_step_timeout: float = Field(
        10.0, gt=0, description="Seconds before a project step in .agent-lsp/init.d/ is killed."
    )


class SandboxSettings(_Section):
    enabled: bool = Field(
        True,
        description="Run commands under the OS sandbox (bubblewrap on Linux) where available: "
        "only the workspace writable, no network. A repository's own config cannot turn it off "
        "until you trust the workspace.",
    )
    network: bool = Field(
        False,
        description="Give every sandboxed command the network (by default only commands the "
        "policy or you allowed as network commands get it).",
    )
    pass_env: list[EnvName] = Field(
        default=[],
        description="Names of environment variables passed into commands, tests and linters "
        "besides the built-in allowlist. Only from your own settings (user file, editor "
        "start-up options, `AGENT_LSP_PASS_ENV`): a repository's own config cannot add names "
        "until you trust the workspace, and never a name that looks like a secret (KEY, TOKEN, "
        "SECRET, PASSWORD, CREDENTIAL ...).",
    )


class CompactionSettings(_Section):
    fix: float = Field(
        0.6,
        ge=0.1,
        le=0.95,
        description="Share of `model.contextWindow` at which a fix task's history is compacted.",
    )
    task: float = Field(
        0.7,
        ge=0.1,
        le=0.95,
        description="Share of `model.contextWindow` at which a "
        "free-text task's history is compacted.",
    )
    explain: float = Field(
        0.5,
        ge=0.1,
        le=0.95,
        description="Share of `model.contextWindow` at which an "
        "explain task's history is compacted.",
    )
    summarise: bool = Field(
        True,
        description="When masking old tool outputs is not enough, one model call summarises "
        "the older turns (the user's instructions and the last 10 turns stay whole); if it "
        "fails, the masked history is kept.",
    )

    def threshold(self, kind: str) -> float:
        return {"fix": self.fix, "explain": self.explain}.get(kind, self.task)


class TeamProgress(StrEnum):
    TERSE = "terse"
    VERBOSE = "verbose"


# The roles of a team task and their default share (percent) of its token budget.
TEAM_SHARES = {
    "commander": 5,
    "planner": 15,
    "retriever": 5,
    "editor": 40,
    "executor": 5,
    "tester": 10,
    "reviewer": 20,
}


class TeamSettings(_Section):
    enabled: bool = Field(
        False,
        description="Run free-text tasks (`agentLsp.runTask`, `agent-lsp run`) in team mode "
        "without asking for it: a commander, a planner, parallel steps and a reviewer. "
        '`"team": false` or a fix task still runs the single agent.',
    )
    workers: int = Field(2, ge=1, le=8, description="Workers of a team task at once.")
    review_rounds: int = Field(
        2,
        ge=0,
        le=10,
        description="Rounds of review findings (or a failing suite) sent back to the planner "
        "before a team task fails.",
    )
    budget_tokens: int | None = Field(
        None,
        ge=1_000,
        description="Token budget of one team task, split across the roles by `team.shares` "
        "(commander 5%, planner 15%, retriever 5%, editor 40%, executor 5%, tester 10%, "
        "reviewer 20%); null = `maxTokens`.",
    )
    budget_seconds: float = Field(
        3600.0, gt=0, description="Seconds one team task may take, resumed runs included."
    )
    progress: TeamProgress = Field(
        TeamProgress.TERSE,
        description="`terse`: the team's milestones (phases, steps done or failed); `verbose`: "
        "every step of every role as well.",
    )
    shares: dict[str, int] = Field(
        dict(TEAM_SHARES),
        description="Percent of a team task's token budget each role may use, by role name "
        "(commander, planner, retriever, editor, executor, tester, reviewer); the roles not "
        "named keep their default; the shares sum to at most 100.",
    )

    @field_validator("shares", mode="after")
    @classmethod
    def _shares(cls, value: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(value) - set(TEAM_SHARES))
        if unknown:
            known = ", ".join(TEAM_SHARES)
            raise ValueError(f"unknown role {', '.join(unknown)} (the roles: {known})")
        if any(v < 0 for v in value.values()):
            raise ValueError("a role's share is a percent from 0 to 100")
        shares = {**TEAM_SHARES, **value}
        if sum(shares.values()) > 100:
            raise ValueError(f"the roles' shares sum to {sum(shares.values())}%, over 100%")
        return shares


def mcp_server_name_problem(name: str) -> str | None:
    """Why `name` cannot name an MCP server (None: it can). Rules name a tool
    `mcp__<server>__<tool>`: a server name holding `__` or ending in `_` would make one such
    name fit two servers' tools (`mcp__a__b__c`: server `a__b`'s `c` and server `a`'s
    `b__c`), so an allow rule or an "Always allow" meant for one would let the other run."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name):
        return "a server name is 1 to 40 of A-Z a-z 0-9 _ . -"
    if "__" in name or name.endswith("_"):
        return (
            "a server name may not hold '__' nor end with '_' (a rule names a tool "
            "mcp__<server>__<tool>, which must name one server's tool)"
        )
    return None


def _server_name(name: str) -> str:
    problem = mcp_server_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


McpServerName = Annotated[str, AfterValidator(_server_name)]


class McpServerSettings(_Section):
    """One MCP server of the user's: a program speaking MCP over its stdin and stdout."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )

    command: list[str] = Field(
        min_length=1, description='The program and its arguments, e.g. `["npx", "-y", …]`.'
    )
    env: dict[EnvName, str] = Field(
        default={}, description="Environment variables set for it, besides the sandbox's."
    )
    network: bool = Field(False, description="Give it the network inside the sandbox.")
    allow: list[str] = Field(
        default=[], description="Names of its tools that run without asking you first."
    )
    readable: list[str] = Field(
        default=[],
        description="Folders of your home it may read inside the sandbox (read-only), besides "
        "the workspace, the toolchains and its own program's folder.",
    )
    enabled: bool = Field(True, description="false: not started, its tools not offered.")


class McpSettings(_Section):
    servers: dict[McpServerName, McpServerSettings] = Field(
        default={},
        description="MCP servers whose tools the agent may use, by name: "
        '`[mcp.servers.docs] command = ["npx", "-y", "some-mcp-server"]`, with optional '
        "`env` (a table), `network` (default false), `allow` (tool names that run without "
        "asking), `readable` (folders of your home shown read-only) and `enabled`. Each starts "
        "inside the sandbox at the first task; every call asks unless `allow` or a policy rule "
        "allows it. Only from your user file (and an ACP client's `session/new`): a project's "
        "config or editor settings never add or change one.",
    )
    client_network: bool = Field(
        False,
        description="Give the network to the MCP servers an ACP client passes in "
        "`session/new` (they run in the sandbox like yours).",
    )


class Settings(_Section):
    """Every agent-lsp setting (camelCase keys on the wire)."""

    model: ModelSettings = Field(default_factory=lambda: ModelSettings.model_validate({}))
    apply_mode: ApplyMode = Field(
        ApplyMode.DIRECT,
        description="`direct` edits the buffer; `review` makes each change a proposal on its "
        "lines (Apply / Show diff / Reject), kept until decided, also across restarts.",
    )
    permission_level: PermissionLevel = Field(
        PermissionLevel.L2,
        description="L0 read-only; L1 edits in the workspace and read-only commands; L2 asks "
        "for every side effect; L3 full-auto for CI, only with an allowlist in the policy "
        "(see docs/security.md).",
    )
    extra_roots: list[str] = Field(
        default=[],
        description="Folders besides the workspace that tools may read and write "
        "(a repository's own config cannot add them until you trust the workspace).",
    )
    sandbox: SandboxSettings = Field(default_factory=lambda: SandboxSettings.model_validate({}))
    max_steps: int = Field(25, ge=1, le=500, description="Most model turns one task may take.")
    max_attempts: int = Field(
        0,
        ge=0,
        le=100,
        description="Most replies that try a fix and leave the tests failing before a task "
        "stops (as aider's reflections do); 0: 4 for the small-model profile (a small model "
        "that has not fixed it in four tries rarely does in ten), no limit otherwise.",
    )
    tool_timeout: float = Field(60.0, gt=0, description="Seconds before a tool call is stopped.")
    edit_timeout: float = Field(
        10.0,
        gt=0,
        description="Seconds an edit waits for the editor before the task says that it waits "
        "(it goes on waiting, e.g. while you confirm the edit: cancel the task to stop).",
    )
    max_tokens: int = Field(
        1_000_000, ge=1_000, description="Token budget of one task (prompt + completion)."
    )
    ask_timeout: float = Field(
        120.0,
        gt=0,
        le=600,
        description="Seconds the agent waits for your answer to a question (ask_user, a "
        "permission prompt, a conflict found at a rebuild); no answer in time is no answer.",
    )
    suggestions: SuggestionSettings = Field(
        default_factory=lambda: SuggestionSettings.model_validate({})
    )
    tests: TestSettings = Field(default_factory=lambda: TestSettings.model_validate({}))
    lint: LintSettings = Field(default_factory=lambda: LintSettings.model_validate({}))
    memory: MemorySettings = Field(default_factory=lambda: MemorySettings.model_validate({}))
    compaction: CompactionSettings = Field(
        default_factory=lambda: CompactionSettings.model_validate({})
    )
    team: TeamSettings = Field(default_factory=lambda: TeamSettings.model_validate({}))
    # excluded from dumps: a server's `env` may hold a token (and only the user file sets it)
    mcp: McpSettings = Field(default_factory=lambda: McpSettings.model_validate({}), exclude=True)
