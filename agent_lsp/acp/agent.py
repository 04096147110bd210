"""`AcpAgent`: the ACP methods on the core. `session/new` opens a `Session` on the workspace
(settings and trust as `serve` and `run` load them), `session/prompt` runs the prompt's words as
a task through `Session.run_task` with the session's `AcpChannel`, `session/cancel` cancels it
(the prompt answers `cancelled`), `session/load` goes on with an earlier session's tasks
(`acp/resume.py`). Bad input (an unknown session, a cwd that is not a folder, a
model that cannot be reached as configured) is a JSON-RPC error, never a crash."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)
from acp.schema import Usage as AcpUsage

from agent_lsp import __version__
from agent_lsp.acp.channel import AcpChannel
from agent_lsp.acp.resume import continuable, latest_task, replay, well_formed
from agent_lsp.acp.updates import PromptBlock, instruction, stop_reason
from agent_lsp.config.endpoint import endpoint_problem
from agent_lsp.config.schema import DEFAULT_CONTEXT_WINDOW, ApplyMode, mcp_server_name_problem
from agent_lsp.config.settings import load_settings
from agent_lsp.errors import AgentLspError
from agent_lsp.loop.summary import task_totals
from agent_lsp.memory.checkpoints import Checkpoint
from agent_lsp.messages import TaskOutcome
from agent_lsp.seams import Model, server_facts_of
from agent_lsp.session import Session, route_of
from agent_lsp.task import Task, TaskKind
from agent_lsp.team import Orchestrator

log = logging.getLogger(__name__)
INVALID_REQUEST, INVALID_PARAMS, INTERNAL = -32600, -32602, -32603


@dataclass
class Live:
    """One ACP session: our session on its workspace, its channel, the prompt running."""

    session: Session
    channel: AcpChannel
    warnings: list[str] = field(default_factory=list[str])
    running: asyncio.Task[TaskOutcome] | None = None
    cancelled: bool = False
    follow: Checkpoint | None = None  # the task the next prompt continues (a loaded session's)


class AcpAgent:
    def __init__(self, model: Model | None = None, root: Path | None = None) -> None:
        """`model`: one given in code (tests, the demo's); `root`: the workspace of every
        session whatever its cwd (`agent-lsp acp --root`)."""
        self.model = model
        self.root = root
        self.client: Client | None = None
        self.capabilities = ClientCapabilities()
        self.sessions: dict[str, Live] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                # stdio MCP servers only (started in the sandbox); http and sse are not spoken
                mcp_capabilities=McpCapabilities(http=False, sse=False),
            ),
            agent_info=Implementation(name="agent-lsp", title="agent-lsp", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        live = await self._open(cwd)
        _join_mcp(live, mcp_servers or [])
        return NewSessionResponse(session_id=live.channel.session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse | None:
        if not well_formed(session_id) or session_id in self.sessions:
            why = "is open already" if session_id in self.sessions else "is not one of ours"
            raise RequestError(INVALID_PARAMS, f"session {session_id!r} {why}")
        live = await self._open(cwd, session_id)
        cp, warnings = await latest_task(live.session, session_id)
        if cp is None and not await asyncio.to_thread(live.session.memory.log.path.exists):
            del self.sessions[session_id]
            await live.session.aclose()
            raise RequestError(-32002, f"no session {session_id} in {live.session.root}")
        live.warnings += warnings
        _join_mcp(live, mcp_servers or [])
        if cp is not None:
            goes_on = await asyncio.to_thread(continuable, live.session, cp)
            live.follow = cp if goes_on else None
            await replay(live.channel, cp, goes_on)
        return LoadSessionResponse()

    async def _open(self, cwd: str, session_id: str | None = None) -> Live:
        """A session on the workspace: settings and trust as `run` loads them; the model
        checked before anything starts."""
        if self.client is None:  # pragma: no cover - the SDK connects before it reads a line
            raise RequestError(INVALID_REQUEST, "not connected")
        root = self.root or Path(cwd)
        if not root.is_absolute():
            raise RequestError(INVALID_PARAMS, f"cwd {cwd!r} is not an absolute path")
        if not await asyncio.to_thread(root.is_dir):
            raise RequestError(INVALID_PARAMS, f"{root} is not a folder")
        loaded = await asyncio.to_thread(load_settings, root)
        settings = loaded.settings
        problem = None if self.model is not None else endpoint_problem(settings.model)
        if problem is not None:
            raise RequestError(INVALID_REQUEST, f"{problem.text}; next: {problem.next_step}")
        session = Session(root, settings, self.model, session_id=session_id)
        fs = self.capabilities.fs
        writes = bool(fs is not None and fs.write_text_file)
        reads = bool(fs is not None and fs.read_text_file)
        sid = session.memory.session_id
        review = settings.apply_mode is ApplyMode.REVIEW
        channel = AcpChannel(
            self.client, sid, root, client_writes=writes, client_reads=reads, review=review
        )
        session.memory.log.listeners.append(channel.log_record)
        live = self.sessions[sid] = Live(session, channel, list(loaded.warnings))
        return live

    async def prompt(
        self, prompt: list[PromptBlock], session_id: str, **kwargs: Any
    ) -> PromptResponse:
        live = self.sessions.get(session_id)
        if live is None:
            raise RequestError(
                INVALID_PARAMS, f"no session {session_id!r}: create one with session/new first"
            )
        if live.running is not None:
            raise RequestError(INVALID_REQUEST, "a prompt is already running in this session")
        words, unsupported = instruction(prompt, live.session.root)
        if unsupported:
            kinds = ", ".join(dict.fromkeys(unsupported))
            raise RequestError(INVALID_PARAMS, f"not supported in a prompt: {kinds} content")
        if not words.strip():
            raise RequestError(INVALID_PARAMS, "the prompt has no text")
        for warning in live.warnings:
            await live.channel.say(f"agent-lsp: warning: {warning}")
        live.warnings = []
        task = Task(kind=TaskKind.TASK, instruction=words)
        follow, live.follow = live.follow, None
        live.running = asyncio.ensure_future(_run(live, task, follow))
        try:
            outcome = await live.running
        except asyncio.CancelledError:
            if not live.cancelled:
                raise
            await live.channel.cancelled()
            await live.channel.say("■ cancelled")
            return PromptResponse(stop_reason="cancelled")
        except AgentLspError as exc:
            await live.channel.say(f"agent-lsp: {exc}")
            return PromptResponse(stop_reason="end_turn")
        except Exception as exc:
            log.error("the task failed: %s", exc, exc_info=exc)
            raise RequestError(INTERNAL, f"internal error: {type(exc).__name__}: {exc}") from exc
        finally:
            live.running, live.cancelled = None, False
        await live.channel.say(_told(outcome))
        usage = outcome.usage if outcome.run_usage is None else outcome.run_usage
        return PromptResponse(
            stop_reason=stop_reason(outcome),
            usage=AcpUsage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                total_tokens=usage.prompt_tokens + usage.completion_tokens,
            ),
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        live = self.sessions.get(session_id)
        if live is not None and live.running is not None and not live.running.done():
            live.cancelled = True
            live.running.cancel()

    async def aclose(self) -> None:
        """Every running task cancelled (its checkpoint kept), every session closed."""
        running = [live.running for live in self.sessions.values() if live.running is not None]
        for live in self.sessions.values():
            live.cancelled = True
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)  # cleaned up: groups killed
        for live in self.sessions.values():
            try:
                await live.session.aclose()
            except Exception as exc:
                log.warning("closing the session on %s: %s", live.session.root, exc)
        self.sessions.clear()


async def _run(live: Live, task: Task, follow: Checkpoint | None) -> TaskOutcome:
    """`task` run (a team task with the `team.enabled` setting: its plan shown as it goes), or
    the stopped task `follow` continued with the prompt's words as its hint;
    the channel told first the context window the loop will use, decided as `run_task` does:
    the one the model's server serves, else `model.contextWindow`, else the default (the
    server asked here, before the loop asks it: it then has the same answer)."""
    routed = task if follow is None else follow.task
    model = await asyncio.to_thread(live.session.routed, route_of(routed))
    facts = await server_facts_of(model)
    served = facts.context_window if facts is not None else None
    setting = live.session.settings.model.context_window
    live.channel.window = served or setting or DEFAULT_CONTEXT_WINDOW
    if follow is None and live.session.settings.team.enabled:  # team mode, as `run` has it
        crew = Orchestrator(live.session, live.channel)
        return (await crew.run(task.instruction)).as_task_outcome()
    hint, task_id = (None, None) if follow is None else (task.instruction, follow.task_id)
    return await live.session.run_task(task, live.channel, hint=hint, task_id=task_id)


def _join_mcp(live: Live, servers: list[Any]) -> None:
    """The client's MCP servers join the session's (the client is the user here); stdio only:
    any other kind is said and left out."""
    stdio: list[tuple[str, list[str], dict[str, str]]] = []
    for server in servers:
        if isinstance(server, McpServerStdio) and (problem := mcp_server_name_problem(server.name)):
            live.warnings.append(f"MCP server {server.name!r} not connected: {problem}")
        elif isinstance(server, McpServerStdio):
            env = {e.name: e.value for e in server.env}
            stdio.append((server.name, [server.command, *server.args], env))
        else:
            kind = getattr(server, "type", type(server).__name__)
            live.warnings.append(
                f"MCP server {getattr(server, 'name', '?')} ({kind}) not connected: agent-lsp "
                "connects stdio MCP servers only"
            )
    if stdio:
        live.session.add_mcp_servers(stdio)


def _told(outcome: TaskOutcome) -> str:
    lines = [f"■ {outcome.status.value} after {outcome.steps} steps: {outcome.summary}"]
    if outcome.changed_files:
        lines.append(f"changed: {', '.join(outcome.changed_files)}")
    if outcome.rechecked and outcome.rechecked not in outcome.summary:
        lines.append(f"re-checked: {outcome.rechecked}")
    lines.append(task_totals(outcome))
    return "\n".join(lines)
