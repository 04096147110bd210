"""Wires the core for one project: settings, model, toolchain, verifier, tools -> an `Agent`."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from adapters import default_shell, describe_project, detect_toolchain, set_extra_args
from adapters.linters import LintIssue
from agent_lsp.config.schema import (
    DEFAULT_CONTEXT_WINDOW,
    CheckAfterEdit,
    Settings,
    ToolCalling,
)
from agent_lsp.errors import AgentLspError
from agent_lsp.loop.agent import Agent
from agent_lsp.loop.control import TaskControl
from agent_lsp.loop.done import (
    DiagnosticCheck,
    FirstAnswer,
    OwnDiagnostics,
    check_by,
    definition_of_done,
)
from agent_lsp.loop.hooks import Limits, ReviewCheck
from agent_lsp.loop.outputs import OutputKeeper
from agent_lsp.loop.prompt import with_notes
from agent_lsp.loop.small import SMALL_ATTEMPTS, SMALL_TOOLS, is_small
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.loop.verify import Verifier, new_shadow_dir
from agent_lsp.memory import (
    MemoryEntry,
    ProjectMemory,
    RememberResult,
    ResumeOffer,
    UndoReport,
)
from agent_lsp.memory.checkpoints import Checkpoint
from agent_lsp.memory.commands import commands_ran, record_commands
from agent_lsp.memory.conflicts import ConflictCheck
from agent_lsp.memory.notes import ProjectNotes, read_notes
from agent_lsp.memory.task import TaskMemory, record_definition_of_done
from agent_lsp.messages import AgentEvent, ChatMessage, EventKind, TaskOutcome
from agent_lsp.project.diagnostics import DiagnosticStore
from agent_lsp.project.git import Git
from agent_lsp.project.readme import readme_head
from agent_lsp.project.status import project_status
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.decision import Decision
from agent_lsp.safety.paths import is_secret_path
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.sandbox import Confinement
from agent_lsp.safety.setup import build_policy
from agent_lsp.safety.tools import guard_tools
from agent_lsp.seams import EditorChannel, Model, Tool, server_facts_of
from agent_lsp.symbols import SymbolIndex, repo_map
from agent_lsp.symbols.cache import cache_path
from agent_lsp.symbols.entries import Extractor
from agent_lsp.task import Task, TaskKind
from agent_lsp.tools import (
    RESERVED_NAMES,
    EditFileTool,
    GetDiagnosticsTool,
    GitDiffTool,
    GitStatusTool,
    ListFilesTool,
    ProjectTool,
    ReadFileTool,
    RememberTool,
    RunCommandTool,
    RunTestsTool,
    SearchTextTool,
    UpdateTaskTool,
    WriteFileTool,
    read_project_tools,
)
from agent_lsp.tools.ask import AskUserTool
from agent_lsp.tools.mcp_host import McpHost, McpServerSpec, skipped_note
from agent_lsp.tools.mcp_tools import MCP_TOOL_NAMES, McpCallTool, McpToolsTool
from agent_lsp.tools.symbols import FindSymbolTool

if TYPE_CHECKING:
    from agent_lsp.team.state import TeamState

REPO_MAP_TOKENS = 500
READ_ONLY_KINDS = (TaskKind.EXPLAIN, TaskKind.IMPROVE)  # answer or propose, edit nothing
CONTINUE = "Go on with the task."  # a continue without words
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def make_model(settings: Settings) -> Model:
    """The configured OpenAI-compatible model (the `openai` import is deferred to here)."""
    from agent_lsp.models.openai_compat import OpenAICompatModel

    return OpenAICompatModel(settings.model)


def route_of(task: Task) -> str:
    """The `model.routes` entry a task goes by."""
    if task.suggestion:
        return "suggestions"
    return task.kind.value


def with_tool_protocol(model: Model, mode: ToolCalling, short: bool = False) -> Model:
    """`model` with the tool protocol `mode` (`short`: the text protocol's tools in a small
    model's form)."""
    from agent_lsp.models.text_tools import AutoToolModel, TextToolModel

    if mode is ToolCalling.TEXT:
        return TextToolModel(model, short)
    if mode is ToolCalling.AUTO:
        return AutoToolModel(model)
    return model


README_CHARS = 1_500  # the README's head in the single agent's first request (not a small model's)


class Session:
    """Long-lived per project (one per LSP server or CLI run); tasks share its shadow copy,
    its diagnostics and the user's "always allow" answers."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        model: Model | None = None,
        *,
        extractor: Extractor | None = None,
        session_id: str | None = None,
    ) -> None:
        """`extractor` parses files for the symbol index (default: in the calling thread; the
        language server passes a `ProcessExtractor`, which parses big files in a child);
        `session_id`: the session log's id (default: a new one; ACP's `session/load` goes on
        with the log and the checkpoints of an earlier one)."""
        self.root = root.resolve()
        self.settings = settings
        self._base_model = model
        self._model: Model | None = None
        self.diagnostics = DiagnosticStore()
        self.always_allowed: set[str] = set()
        self.editor_grants: set[str] = set()  # see `gate(editor=True)`
        self.symbols = SymbolIndex(self.root, extractor=extractor, cache=cache_path(self.root))
        self._repo_map: tuple[tuple[int, tuple[str, ...], frozenset[str]], str] | None = None
        self._verifier: Verifier | None = None
        self._profile: str | None = None
        self._raw_model: Model | None = None
        self._routed: dict[str, tuple[Model, Model]] = {}  # kind -> (raw, with tool protocol)
        self.memory = ProjectMemory(self.root, session_id)
        self.safety = build_policy(self.root, settings)
        self._safety_told = False
        self.control: TaskControl | None = None  # the running task's: steer, ask_user
        # The LSP layer's re-check of editor diagnostics (a wrapped server); None headless.
        self.diagnostic_check: DiagnosticCheck | None = None
        self._mcp: McpHost | None = None  # started at the first task that has servers
        self._client_mcp: list[McpServerSpec] = []  # an ACP client's servers
        self._mcp_told: set[str] = set()

    # -- everything the agent runs goes through one of these (agent_lsp.safety.confined) -----

    def confined(self, writable: tuple[Path, ...] = (), network: bool = False) -> ConfinedShell:
        """A shell confined to the sandbox: the workspace and extra roots visible (their
        secret files hidden), only `writable` writable."""
        roots = (self.root, *self.safety.sandbox.extra_writable)
        confinement = Confinement(
            writable=writable, visible=roots, network=network or self.settings.sandbox.network
        )
        return ConfinedShell(self.safety.sandbox, confinement, default_shell())

    @property
    def command_shell(self) -> ConfinedShell:
        """For `run_command`: the workspace writable from L2 up (L0 and L1 never write through
        commands, so the sandbox does not let them)."""
        level = self.safety.engine.level.value
        writable = (self.root, *self.safety.sandbox.extra_writable) if level >= "L2" else ()
        return self.confined(writable)

    # -- MCP servers: the user's (`mcp.servers`) and an ACP client's, each run confined --------

    def mcp_specs(self) -> list[McpServerSpec]:
        """The servers of this session: the user file's enabled ones, then the client's."""
        own = [
            McpServerSpec(
                name,
                tuple(server.command),
                dict(server.env),
                server.network,
                frozenset(server.allow),
                tuple(Path(p).expanduser() for p in server.readable),
            )
            for name, server in self.settings.mcp.servers.items()
            if server.enabled
        ]
        return [*own, *self._client_mcp]

    def add_mcp_servers(
        self, servers: Sequence[tuple[str, Sequence[str], Mapping[str, str]]]
    ) -> None:
        """Servers an ACP client passed in `session/new` (name, argv, environment): the client
        is the user here. They run in the sandbox like the user's own, with the network only
        if `mcp.clientNetwork` says so, and every call of theirs asks."""
        network = self.settings.mcp.client_network
        specs = [
            McpServerSpec(name, tuple(argv), dict(env), network, source="ACP client")
            for name, argv, env in servers
        ]
        self._client_mcp += specs
        if self._mcp is not None:
            self._mcp.add(specs)

    @property
    def mcp(self) -> McpHost | None:
        """The session's MCP servers (None when there are none); nothing starts until used."""
        if self._mcp is None and (specs := self.mcp_specs()):
            self._mcp = McpHost(self.root, self._mcp_shell, specs, on_event=self._mcp_event)
        return self._mcp

    def _mcp_shell(self, spec: McpServerSpec) -> ConfinedShell:
        """A server runs as a command does (the workspace writable from L2 up), with the
        network only when its own `network` says so."""
        return self.command_shell.but(network=spec.network)

    def _mcp_event(self, server: str, event: str, detail: str) -> None:
        self.memory.log.record("mcp", "mcp", server=server, event=event, detail=detail)

    async def start_mcp(self, channel: EditorChannel) -> None:
        """Start the servers (at a task's start, so their tools are named in its first
        request); a server that failed, or runs without a sandbox, is said once."""
        host = self.mcp
        if host is None:
            return
        found = await host.start_all()
        sandboxed = self.command_shell.sandboxed
        for server in found:  # tools left out for their names: said once
            if (left_out := host.skipped(server)) and f"{server} names" not in self._mcp_told:
                self._mcp_told.add(f"{server} names")
                message = f"agent-lsp: MCP server {server}: {skipped_note(left_out)}"
                await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=message))
        for server, tools in found.items():
            if server in self._mcp_told:
                continue
            if isinstance(tools, str):
                message = f"agent-lsp: {tools}"
            elif not sandboxed:
                why = self.safety.sandbox.status().reason
                message = (
                    f"agent-lsp: MCP server {server} runs without an OS sandbox ({why}), with "
                    "your permissions; each of its tool calls asks unless you allowed it"
                )
            else:
                continue
            self._mcp_told.add(server)
            await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=message))

    @property
    def git(self) -> Git:
        """git for the agent's tools: it sees the real files (no empty stand-ins to report as
        changes), and names and diffs of secret or denied files are dropped from its output."""
        return Git(self.root, self.confined().but(show_secrets=True), self._hidden_rel)

    def _hidden_rel(self, rel: str) -> bool:
        hide = self.safety.sandbox.hide
        return self._secret_rel(rel) or (hide is not None and hide(str(self.root / rel)))

    def _secret_rel(self, rel: str) -> bool:
        return is_secret_path(PurePosixPath(rel), self.safety.engine.guard.home)

    @property
    def model(self) -> Model:
        if self._model is None:
            self._model = with_tool_protocol(self.raw_model, self.settings.model.tool_calling)
        return self._model

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def raw_model(self) -> Model:
        """The model without the tool protocol wrapper (for calls without tools)."""
        if self._raw_model is None:
            self._raw_model = self._base_model or make_model(self.settings)
        return self._raw_model

    def routed(self, kind: str, tools: bool = True) -> Model:
        """The model of a task kind (`model.routes`), the main one behind it; `tools`: with
        the tool protocol (a task's loop), else raw (calls without tools)."""
        from agent_lsp.models.routes import routed_model

        if kind not in self._routed:
            raw = routed_model(kind, self.settings.model, self.raw_model)
            if raw is self.raw_model:
                return self.model if tools else raw
            self._routed[kind] = (raw, with_tool_protocol(raw, self.settings.model.tool_calling))
        raw, wrapped = self._routed[kind]
        return wrapped if tools else raw

    def gate(self, channel: EditorChannel, *, editor: bool = False) -> CommandPolicy:
        """The permission gate of one task: the session's policy, the user's "always allow"
        answers, and every decision recorded in the session log. `editor`: for the runs the
        editor starts outside a task (`agentLsp.runTests`, run-on-save, the linters), which
        share one grant per session (asked once, not at every save)."""

        def record(decision: Decision) -> None:
            self.memory.log.record("decision", "policy", **decision.model_dump(mode="json"))

        gate = CommandPolicy(
            channel, self.always_allowed, engine=self.safety.engine, on_decision=record
        )
        if editor:
            gate.granted = self.editor_grants
        return gate

    async def tell_safety(self, channel: EditorChannel) -> None:
        """Notices about the policy (sandbox missing, L3 without an allowlist), once."""
        if self._safety_told:
            return
        self._safety_told = True
        for message in self.safety.messages:
            await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=message))

    def update_settings(self, settings: Settings) -> None:
        self.safety = build_policy(self.root, settings)
        self._safety_told = False
        self.editor_grants.clear()  # asked again under the new settings
        if settings.mcp != self.settings.mcp and self._mcp is not None:
            self._mcp.close()  # the servers as the new settings say, from the next task on
            self._mcp, self._mcp_told = None, set()
        if self._verifier is not None:  # confined by the new settings from the next run on
            writable = (self._verifier.shadow_dir, *self.safety.sandbox.extra_writable)
            self._verifier.shell = self.confined(writable)
            if settings.tests.command != self.settings.tests.command:  # another runner
                self._verifier.adapter = detect_toolchain(
                    self.root, settings.tests.args, settings.tests.command
                )
            set_extra_args(self._verifier.adapter, settings.tests.args)
        if settings.model != self.settings.model:
            self._model = None
            self._routed = {}
            if self._base_model is None:
                self._raw_model = None
        self.settings = settings

    def record(self, kind: str, source: str, **data: Any) -> None:
        """A line of this session's log (team mode's roles write theirs through it)."""
        self.memory.log.record(kind, source, **data)

    async def profile(self) -> str:
        """Toolchain profile (cached) and the git status (fresh for every task)."""
        if self._profile is None:
            self._profile = await asyncio.to_thread(describe_project, self.root)
        status = await project_status(self.git)
        return f"{self._profile}\n{status}"

    @property
    def checker(self) -> Verifier:
        """The shadow copy and the test runner (if the project has one) behind every check."""
        if self._verifier is None:
            shadow = new_shadow_dir()
            writable = (shadow, *self.safety.sandbox.extra_writable)
            self._verifier = Verifier(
                self.root,
                detect_toolchain(self.root, self.settings.tests.args, self.settings.tests.command),
                self.confined(writable),
                self.settings.tests.timeout,
                self.diagnostics,
                shadow_dir=shadow,
                skip=self._secret_rel,
            )
        return self._verifier

    def files_changed(self, rels: Sequence[str]) -> None:
        """Files the editor saw change (relative POSIX paths): the shadow copy, if there is one
        yet, copies them again at its next sync (whatever their size and mtime)."""
        if self._verifier is not None:
            self._verifier.note_changed(rels)

    @property
    def verifier(self) -> Verifier | None:
        """The checker, when the project has a test runner."""
        return self.checker if self.checker.adapter is not None else None

    async def lint(self, channel: EditorChannel) -> list[LintIssue]:
        """The project's linters on the editor's text (`lint.enabled`)."""
        gate = self.gate(channel, editor=True)
        return await self.checker.lint(Workspace(self.root, channel, gate))

    def tools(
        self, workspace: Workspace, channel: EditorChannel, control: TaskControl | None = None
    ) -> list[Tool]:
        """Every tool of the contract, in the order the model sees them (`ask_user` with a
        task's `control`)."""
        policy = workspace.policy
        timeout = self.settings.tool_timeout
        tools: list[Tool] = [
            ReadFileTool(workspace),
            ListFilesTool(workspace),
            SearchTextTool(workspace),
            FindSymbolTool(workspace, self.symbols),
            EditFileTool(workspace, lambda name: bool(self.symbols.definitions(name))),
            WriteFileTool(workspace),
            RunTestsTool(workspace, self.verifier),
            RunCommandTool(workspace, self.command_shell, policy, timeout),
            GitStatusTool(workspace, self.git),
            GitDiffTool(workspace, self.git),
            GetDiagnosticsTool(workspace, self.diagnostics),
            RememberTool(workspace),
            UpdateTaskTool(workspace),
        ]
        if control is not None:
            tools.append(AskUserTool(control))
        declared = read_project_tools(self.root, self.safety.trusted, RESERVED_NAMES)
        shell = self.command_shell
        tools += [ProjectTool(n, d, workspace, shell, policy) for n, d in declared.tools.items()]
        if self.mcp is not None:  # deferred: two tools, whatever the servers offer
            tools += [McpToolsTool(self.mcp), McpCallTool(self.mcp, policy, timeout)]
        return guard_tools(tools, policy)

    async def repo_map(self, task: Task, channel: EditorChannel) -> str:
        """A token-budgeted map of the project, the task's file and named symbols first."""
        buffers = dict(channel.buffers())
        focus = [self.root / task.path] if task.path else []
        words = set(
            IDENTIFIER.findall(
                task.instruction + " " + (task.diagnostic.message if task.diagnostic else "")
            )
        )

        def build() -> str:
            self.symbols.refresh()  # the disk's changes (a stat per file)
            self.symbols.sync_buffers(buffers)  # the editor's
            # The ranking over every file is the costly part: kept while the index does not
            # change (its generation grows with any file indexed, changed or dropped).
            key = (self.symbols.generation, tuple(map(str, focus)), frozenset(words))
            if self._repo_map is not None and self._repo_map[0] == key:
                return self._repo_map[1]
            text = repo_map(self.symbols, REPO_MAP_TOKENS, focus_files=focus, mentioned=words)
            self._repo_map = (key, text)
            return text

        return await asyncio.to_thread(build)

    def make_agent(
        self,
        channel: EditorChannel,
        profile: str,
        repo: str = "",
        read_only: bool = False,
        control: TaskControl | None = None,
        extra: Sequence[Tool] = (),
        notes: ProjectNotes | None = None,
        small: bool | None = None,
    ) -> Agent:
        """An agent for one task; `read_only` (explain) gets only the tools that change nothing
        and is done when it answers; `control` lets the user steer it and it ask the user;
        `small`, the small-model profile (default: from the settings alone);
        `extra` tools of this task only (improve: propose_improvement); `notes`, the project's
        (default: read now), end the system prompt and the tool descriptions."""
        workspace = Workspace(self.root, channel, self.gate(channel))
        tools = self.tools(workspace, channel, control)
        if read_only:
            tools = [
                tool
                for tool in tools
                if tool.read_only and tool.name != "run_tests" and tool.name not in MCP_TOOL_NAMES
            ]
        tools += guard_tools(list(extra), workspace.policy)
        notes = notes if notes is not None else read_notes(self.root, self.safety.trusted)
        small = self.small_model() if small is None else small
        if small:
            own = {t.name for t in extra}
            tools = [t for t in tools if t.name in SMALL_TOOLS or t.name in own]
        check = self.settings.tests.check_after_edit
        limits = Limits(
            max_steps=self.settings.max_steps,
            max_tokens=self.settings.max_tokens,
            context_window=self.settings.model.context_window or DEFAULT_CONTEXT_WINDOW,
            words_in_row=3 if small else 2,
            attempts=self.settings.max_attempts or (SMALL_ATTEMPTS if small else 0),
            check_after_edit=check is CheckAfterEdit.ON or (check is CheckAfterEdit.AUTO and small),
        )
        toolbox = ToolBox(
            tools,
            timeout=self.settings.tool_timeout,
            slow_timeout=max(self.settings.tests.timeout, 600) + 30,
            keeper=OutputKeeper(self.root),
            notes=notes.tools,
        )
        verifier = None if read_only else self.verifier
        profile = with_notes(profile, notes.prompt)
        agent = Agent(
            self.model, toolbox, workspace, channel, verifier, profile, limits, repo, None, control
        )
        agent.small = small
        agent.diagnostic_check = self._diagnostic_check()
        if not read_only:
            agent.review_check = self._review_check(channel)
        return agent

    def _review_check(self, channel: EditorChannel) -> ReviewCheck:
        """The team reviewer's own checks on the single agent's changed files before done:
        the errors that must not ship — a leaked secret, a leftover conflict marker, the
        project's linter's error on an added line (whitespace alone does not cost the task
        another model call)."""
        from agent_lsp.team.review import review_checks

        async def check(changed: Sequence[str]) -> list[str]:
            checks = await review_checks(self.root, self.git, channel, changed, self.lint)
            return [
                finding.text()
                for finding in checks.errors
                if finding.category != "whitespace" or "conflict" in finding.finding
            ]

        return check

    def small_model(self, served: int | None = None) -> bool:
        """The small-model profile (`model.profile`; auto: from the context window — the
        setting, else what the server said, `served` — and the model's name)."""
        model = self.settings.model
        window = model.context_window or served
        return is_small(model.profile.value, window, model.name)

    def _diagnostic_check(self) -> DiagnosticCheck:
        """agent-lsp's own diagnostics first (tests, linters), then the editor's side."""
        checks: list[DiagnosticCheck] = [OwnDiagnostics(self.checker)]
        if self.diagnostic_check is not None:
            checks.append(self.diagnostic_check)
        return FirstAnswer(checks)

    def _record_definition_of_done(self, task: Task) -> None:
        by = check_by(task, self.diagnostic_check is not None)
        definition = definition_of_done(task, self.verifier, by)
        try:
            record_definition_of_done(self.memory.layout, definition)
        except (OSError, AgentLspError) as exc:  # never stops the task
            self.memory.log.record("warn", "memory", message=f"definition of done not kept: {exc}")

    async def run_task(
        self,
        task: Task,
        channel: EditorChannel,
        *,
        resume: bool = False,
        hint: str | None = None,
        task_id: str | None = None,
        tools: Sequence[Tool] = (),
    ) -> TaskOutcome:
        """Run `task`; with `resume`, continue the interrupted task instead (see
        `pending_resume`), from its last checkpoint; with `hint`, continue the stopped task
        `task_id` (default: the latest that stopped short) in the same conversation, the hint
        its next user message (see `stopped_task`)."""
        begun = time.monotonic()  # the totals count the task's start-up too
        checkpoint = None
        if hint is not None:
            checkpoint = await asyncio.to_thread(self.stopped_task, task_id)
            task = checkpoint.task
        elif resume:
            checkpoint = await asyncio.to_thread(self.memory.pending)
            if checkpoint is None:
                raise AgentLspError("no interrupted task to resume")
            task = checkpoint.task
        await self.tell_safety(channel)
        await asyncio.to_thread(lambda: self.model)  # the openai import, off the event loop
        control = TaskControl(channel, self.settings.ask_timeout, title=task.title())
        notes = await asyncio.to_thread(read_notes, self.root, self.safety.trusted)
        declared = read_project_tools(self.root, self.safety.trusted, RESERVED_NAMES)
        for warning in (*notes.warnings, *declared.warnings):
            await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=warning))
        read_only = task.kind in READ_ONLY_KINDS
        if not read_only:
            await self.start_mcp(channel)
        model = await asyncio.to_thread(self.routed, route_of(task))
        facts = await server_facts_of(model)  # the server's own window, when it says
        window = facts.context_window if facts is not None else None
        small = self.small_model(window)
        agent = self.make_agent(channel, "", "", read_only, control, tools, notes, small=small)
        agent.model = model
        if small and self.settings.model.tool_calling in (ToolCalling.AUTO, ToolCalling.TEXT):
            # A small model reads the text protocol's few lines better than a template's tool
            # schemas (~1,000 tokens of them, each evaluated on a CPU), and never switching
            # mid-task keeps the server's prompt cache.
            raw = await asyncio.to_thread(self.routed, route_of(task), False)
            agent.model = with_tool_protocol(raw, ToolCalling.TEXT, short=True)
        agent.limits = replace(
            agent.limits,
            compact_at=self.settings.compaction.threshold(task.kind.value)
            * (0.75 if agent.small else 1.0),
            summarise=self.settings.compaction.summarise,
            context_window=window or agent.limits.context_window,
        )
        profile, agent.repo_map, memory = await self._prepare(task, channel, agent, checkpoint)
        agent.profile = with_notes(profile, notes.prompt)
        agent.hooks = memory
        self._watch(control, memory.checkpoint, fresh=checkpoint is None)
        if checkpoint is None:
            await asyncio.to_thread(self._record_definition_of_done, task)
        point = memory.resume_point()
        earlier = _tool_runs(point.messages) if point is not None else 0
        if point is not None and hint is not None:
            point = point.model_copy(update={"hint": " ".join(hint.split()) or CONTINUE})
            agent.limits = replace(  # a new allowance of steps and tokens from here
                agent.limits,
                max_steps=point.step + agent.limits.max_steps,
                max_tokens=point.usage.prompt_tokens
                + point.usage.completion_tokens
                + agent.limits.max_tokens,
            )
        self.control = control
        try:
            outcome = await agent.run(task, point)
        except BaseException:
            self.control = None
            self.memory.abandon(memory)  # the task file says cancelled or interrupted
            raise
        self.control = None
        usage = outcome.usage if point is None else outcome.usage.since(point.usage)
        outcome = outcome.model_copy(
            update={
                "seconds": time.monotonic() - begun,
                "tool_runs": max(0, _tool_runs(agent.messages) - earlier),
                "run_usage": None if point is None else usage,
                "cost": self.settings.model.price.cost(
                    usage.prompt_tokens, usage.completion_tokens
                ),
            }
        )
        distill = self.settings.memory.distill
        distiller = self.routed("distillation", tools=False) if distill else None
        outcome = await self.memory.finish(memory, outcome, agent.messages, distiller)
        await asyncio.to_thread(self._keep_stop, memory.checkpoint, outcome, agent.messages)
        await self._suggest_tools(channel, memory.checkpoint.task_id, agent.messages)
        return outcome

    async def _suggest_tools(
        self, channel: EditorChannel, task_id: str, messages: Sequence[ChatMessage]
    ) -> None:
        """A command run in 3 tasks and not a project tool: said once, at the task's end."""
        declared = read_project_tools(self.root, self.safety.trusted, RESERVED_NAMES)
        argvs = [decl.command for decl in declared.tools.values()]
        ran = commands_ran(messages)
        due = await asyncio.to_thread(record_commands, self.root, task_id, ran, argvs)
        for line in due:
            await channel.report(AgentEvent(kind=EventKind.MESSAGE, message=line))

    async def _prepare(
        self, task: Task, channel: EditorChannel, agent: Agent, checkpoint: Checkpoint | None
    ) -> tuple[str, str, TaskMemory]:
        """The profile (git status) then the task's memory (log, checkpoint, recall), and the
        repo map beside them: the first model request waits for all. The memory begins after
        the git status, which must not see the files it creates (a first `.agent-lsp/`). When
        one part fails the other is still awaited, and a begun task memory is let go."""
        options = self.settings.memory

        async def status_then_memory() -> tuple[str, TaskMemory]:
            profile = await self.profile()
            if not agent.small and (head := readme_head(agent.workspace, README_CHARS)):
                profile += f"\nREADME (its head):\n{head}"
            memory = await self.memory.begin(task, channel, agent.workspace, options, checkpoint)
            return profile, memory

        first, repo = await asyncio.gather(
            status_then_memory(), self.repo_map(task, channel), return_exceptions=True
        )
        if isinstance(first, BaseException):
            raise first
        if isinstance(repo, BaseException):
            self.memory.abandon(first[1])
            raise repo
        return first[0], repo, first[1]

    # -- the user in the loop: continue, steer, conflicts (the work is in agent_lsp.loop.control) --

    def stopped_task(self, task_id: str | None = None) -> Checkpoint:
        """The task `continue` goes on with: `task_id`, else the latest that stopped short
        (paused, max steps, the model gave up...); `AgentLspError` saying why there is none."""
        return self.memory.checkpoints.stopped(task_id, [])

    def team_to_continue(self, task_id: str | None = None) -> TeamState | None:
        """The team task `continue` goes on with: `task_id`, else the latest task that stopped
        short when it is a team task; None when it is a single agent's (`stopped_task`);
        `AgentLspError` when it cannot go on (ended DONE, discarded)."""
        from agent_lsp.team.proceed import team_to_continue
        from agent_lsp.team.state import TeamStore

        return team_to_continue(TeamStore(self.root), self.memory.checkpoints, task_id, [])

    def steer(self, note: str) -> bool:
        """A note for the running task, taken into its conversation at the next step (any
        thread); False when no task runs (or the note is empty)."""
        control = self.control
        return control is not None and control.steer(note)

    def _watch(self, control: TaskControl, cp: Checkpoint, fresh: bool) -> None:
        check = ConflictCheck(self.memory.layout, cp)
        if fresh:
            check.baseline()
        control.conflicts = check
        control.on_change = lambda: self.memory.checkpoints.save(cp)

    def _keep_stop(self, cp: Checkpoint, outcome: TaskOutcome, messages: list[ChatMessage]) -> None:
        """Why the task stopped, and its whole conversation (the model's last words too): what
        a continue goes on from."""
        cp.stop_reason = outcome.stop_reason
        cp.messages, cp.step, cp.usage = list(messages), outcome.steps, outcome.usage
        self.memory.checkpoints.save(cp)

    # -- memory, resume and undo (thin: the work is in agent_lsp.memory) ---------------------

    @property
    def log_path(self) -> Path:
        """This session's JSON-lines log (created on first use)."""
        return self.memory.open_log()

    def pending_resume(self, warnings: list[str] | None = None) -> ResumeOffer | None:
        """A task cut short by a crash or restart, not running anywhere: offer to resume it
        (checkpoints that are not this user's are said in `warnings`)."""
        return self.memory.offer(warnings)

    def discard_resume(self) -> str | None:
        """Decline the offer: the interrupted task is no longer offered (its undo stays)."""
        return self.memory.discard()

    async def remember(self, note: str) -> RememberResult:
        """The user's "remember this": saved with the running task when it ends, else distilled
        from the last task of this session (one model call), else saved as written."""
        model = self.routed("distillation", tools=False) if self.settings.memory.distill else None
        return await self.memory.remember(note, model)

    async def memory_list(self) -> list[MemoryEntry]:
        return await asyncio.to_thread(self.memory.entries, [])

    async def memory_show(self, name: str) -> str:
        return await asyncio.to_thread(self.memory.show, name)

    async def memory_forget(self, name: str) -> str:
        return await asyncio.to_thread(self.memory.forget, name)

    async def undo(
        self,
        channel: EditorChannel,
        steps: int | None = 1,
        task_id: str | None = None,
        force: bool = False,
    ) -> UndoReport:
        """Revert the agent's last `steps` steps (None: the whole task), through the editor."""
        workspace = Workspace(self.root, channel, self.gate(channel))
        return await self.memory.undo(workspace, steps, task_id, force)

    def close(self) -> None:
        if self._mcp is not None:
            self._mcp.close()
            self._mcp = None
        self.symbols.close()
        if self._verifier is not None:
            self._verifier.close()
            self._verifier = None

    async def aclose(self) -> None:
        if self._mcp is not None:
            await self._mcp.aclose()
            self._mcp = None
        self.close()
        close = getattr(self._model or self._raw_model or self._base_model, "aclose", None)
        if close is not None:
            await close()
        for raw, _ in self._routed.values():
            close = getattr(raw, "aclose", None)
            if close is not None:
                await close()
        self._routed = {}


def _tool_runs(messages: Sequence[ChatMessage]) -> int:
    return sum(m.role == "tool" for m in messages)
