"""`create_server`: registers the LSP handlers; each one decodes, makes one call, encodes.

Only lsprotocol and pygls load at start-up; the agent's state (`state.py`) loads on first use."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer

from agent_lsp import __version__
from agent_lsp.errors import AgentLspError
from agent_lsp.lsp.actions import CANCEL_COMMAND, EXPLAIN_COMMAND, FIX_COMMAND, code_actions
from agent_lsp.lsp.agent_thread import settle_heap
from agent_lsp.lsp.convert import uri_to_path
from agent_lsp.lsp.documents import LineTextDocument, use_line_store
from agent_lsp.lsp.held import held_buffers
from agent_lsp.lsp.proposals import APPLY, REJECT, SHOW, review_actions
from agent_lsp.lsp.protocol import AgentProtocol
from agent_lsp.lsp.questions import ANSWER, answer_actions
from agent_lsp.lsp.selection import (
    ASK_SELECTION_COMMAND,
    DEFAULT_SELECTION_TASK,
    SELECTION_KIND,
    selection_actions,
    selection_from,
)
from agent_lsp.lsp.steer import CONTINUE, STEER

if TYPE_CHECKING:
    from agent_lsp.config.schema import Settings
    from agent_lsp.loop.done import DiagnosticCheck
    from agent_lsp.lsp.state import AgentState
    from agent_lsp.seams import Model

log = logging.getLogger(__name__)
RUN_TASK_COMMAND = "agentLsp.runTask"
RUN_TESTS_COMMAND = "agentLsp.runTests"


class AgentLanguageServer(LanguageServer):
    """pygls server plus the agent's state for one workspace (created on first use)."""

    def __init__(self, model_factory: Callable[[Settings], Model] | None = None) -> None:
        super().__init__("agent-lsp", __version__, protocol_cls=AgentProtocol)
        self.model_factory = model_factory
        self.roots: list[Path] = []
        self.options: Any = None
        # Set in proxy mode: the wrapped server re-checks a fix's diagnostic (agent_lsp.loop.done).
        self.diagnostic_check: DiagnosticCheck | None = None
        self.client_name = ""  # clientInfo: capabilities under-report some clients' support
        self._state: AgentState | None = None
        self._loading: asyncio.Future[ModuleType] | None = None
        self._starting: set[asyncio.Future[None]] = set()  # tasks asked for while loading
        # diagnostics that arrived before the agent was loaded (a wrapped server publishes at
        # once on didOpen), handed over when it is: the latest per file
        self._early: dict[str, list[t.Diagnostic]] = {}

    async def load(self) -> AgentState:
        """The agent's state, with its imports (~0.3 s: pydantic, the core, the adapters) done
        in a worker thread so that the editor's first requests are answered meanwhile; the
        state itself is built here, on the server's loop."""
        if self._state is None:
            loading = self._loading
            if loading is None:
                name = "agent_lsp.lsp.state"
                loading = asyncio.ensure_future(asyncio.to_thread(import_module, name))
                self._loading = loading
            await asyncio.shield(loading)
        return self.state

    @property
    def state(self) -> AgentState:
        if self._state is None:
            if not self.roots:
                raise AgentLspError("the server is not initialized")
            from agent_lsp.lsp.state import AgentState

            self._state = AgentState(self, self.roots, self.options, self.model_factory)
            early, self._early = self._early, {}
            for uri, diagnostics in early.items():
                if diagnostics:
                    self.note_editor_diagnostics(uri, diagnostics)
        return self._state

    @property
    def started(self) -> AgentState | None:
        return self._state

    async def workspace_apply_edit_async(
        self, params: t.ApplyWorkspaceEditParams
    ) -> t.ApplyWorkspaceEditResult:
        """Every edit the server sends: the `AGENT:` lines it puts in are the server's, not
        the user's (steering takes only what the user typed: `lsp.typed`)."""
        known = self._state.control.not_typed if self._state is not None else None
        put = await known.expect(params.edit) if known is not None else {}
        try:
            result = await super().workspace_apply_edit_async(params)
        except BaseException:
            if known is not None:
                known.forget(put)
            raise
        if known is not None and not result.applied:
            known.forget(put)
        return result

    def start_task(
        self, start: Callable[[AgentState, str | None], dict[str, str]]
    ) -> dict[str, str]:
        """A command that starts a task, answered at once (an editor may wait for the answer:
        Eglot does). While the agent still loads (a command right after start-up) the answer is
        the id the task will have, and `start` runs when the agent is there; a refusal then
        (another task running) is shown as a message. Never waits on the server's loop."""
        if self._state is not None:
            return start(self._state, None)
        import uuid

        task_id = uuid.uuid4().hex[:8]

        async def when_loaded() -> None:
            try:
                start(await self.load(), task_id)
            except Exception:  # the editor has its answer; the server stays up
                log.exception("the task %s asked for while loading did not start", task_id)

        job = asyncio.ensure_future(when_loaded())
        self._starting.add(job)
        job.add_done_callback(self._starting.discard)
        return {"taskId": task_id}

    def note_editor_diagnostics(self, uri: str, diagnostics: Sequence[t.Diagnostic]) -> None:
        """Recorded after the answer went out: code actions stay cheap. Before the agent is
        loaded they wait for it (never dropped: the server may not publish them again)."""
        if self._state is None:
            self._early[uri] = list(diagnostics)
        elif diagnostics:
            asyncio.get_running_loop().call_soon(
                self._state.note_editor_diagnostics, uri, list(diagnostics)
            )


def _roots_of(params: t.InitializeParams) -> list[Path]:
    """Every workspace folder (multi-root), else the root URI or path, else the cwd."""
    uris = [f.uri for f in params.workspace_folders or []] or [params.root_uri or ""]
    roots = [p for p in (uri_to_path(u) for u in uris if u) if p is not None]
    if roots:
        return roots
    return [Path(params.root_path) if params.root_path else Path.cwd()]


def _uri(given: dict[str, Any]) -> str | None:
    uri = given.get("uri")
    return str(uri) if uri else None


def _first_dict(args: Sequence[Any]) -> dict[str, Any]:
    return args[0] if args and isinstance(args[0], dict) else {}


def create_server(model_factory: Callable[[Settings], Model] | None = None) -> AgentLanguageServer:
    """A new server; `model_factory` replaces the configured model (demo, tests)."""
    server = AgentLanguageServer(model_factory)

    @server.feature(t.INITIALIZE)
    def initialize(ls: AgentLanguageServer, params: t.InitializeParams) -> None:
        use_line_store(ls.workspace)  # fast incremental didChange on big buffers
        ls.roots, ls.options = _roots_of(params), params.initialization_options
        info = params.client_info
        ls.client_name = f"{info.name} {info.version or ''}".strip() if info else ""

    @server.feature(t.INITIALIZED)
    async def initialized(ls: AgentLanguageServer, params: t.InitializedParams) -> None:
        state = await ls.load()  # load the agent now, after the initialize answer went out
        settle_heap()  # what that loaded lives as long as the server: keep it out of GC walks
        state.background(state.offer_resume())
        workspace = ls.client_capabilities.workspace
        if workspace and workspace.configuration:  # settings the editor keeps (pull model)
            try:
                items = [t.ConfigurationItem(section="agentLsp")]
                pulled = await asyncio.wait_for(
                    ls.workspace_configuration_async(t.ConfigurationParams(items=items)), 5
                )
            except Exception:  # an editor that cannot answer keeps initializationOptions
                return
            if pulled and isinstance(pulled[0], dict) and pulled[0]:
                from agent_lsp.config.settings import deep_merge  # loaded with the state

                state.apply_editor_settings(deep_merge(ls.options or {}, pulled[0]))

    @server.feature(t.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(
        ls: AgentLanguageServer, params: t.DidChangeWorkspaceFoldersParams
    ) -> None:
        for folder in params.event.added:
            if (path := uri_to_path(folder.uri)) is not None:
                (await ls.load()).add_folder(path)
        for folder in params.event.removed:
            if (path := uri_to_path(folder.uri)) is not None:
                (await ls.load()).remove_folder(path)

    @server.feature(
        t.TEXT_DOCUMENT_CODE_ACTION,
        t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix, SELECTION_KIND]),
    )
    def code_action(ls: AgentLanguageServer, params: t.CodeActionParams) -> list[t.CodeAction]:
        only = [str(k) for k in params.context.only or []]
        about = selection_actions(
            params.text_document.uri, params.range, [d.range for d in params.context.diagnostics]
        )
        if only:
            about = [a for a in about if any(SELECTION_KIND.startswith(k) for k in only)]
            if not any(k.startswith("quickfix") for k in only):
                return about
        diagnostics = params.context.diagnostics
        ls.note_editor_diagnostics(params.text_document.uri, diagnostics)
        running = ls.started.tasks.running_id if ls.started else None
        uri = params.text_document.uri
        special = [a for d in diagnostics for a in review_actions(d) + answer_actions(d)]
        others = [d for d in diagnostics if not (review_actions(d) or answer_actions(d))]
        ready = ls.started.suggestions.actions(uri, others) if ls.started else []
        go_on = ls.started.control.actions(uri) if ls.started else []
        return special + ready + code_actions(uri, others, running, about) + go_on

    @server.command(FIX_COMMAND)
    def fix(
        ls: AgentLanguageServer, uri: str, diagnostic: t.Diagnostic, *more: Any
    ) -> dict[str, str]:
        where = selection_from(more[0].get("range")) if more and isinstance(more[0], dict) else None
        return ls.start_task(
            lambda state, task_id: state.fix(uri, diagnostic, task_id=task_id, selection=where)
        )

    @server.command(ASK_SELECTION_COMMAND)
    def ask_selection(ls: AgentLanguageServer, *args: Any) -> dict[str, str]:
        given = _first_dict(args)
        where = selection_from(given.get("range"))
        uri = given.get("uri")
        if not uri or where is None:
            return {"error": f'{ASK_SELECTION_COMMAND} needs {{"uri": ..., "range": ...}}'}
        text = str(given.get("task") or "").strip() or DEFAULT_SELECTION_TASK
        return ls.start_task(
            lambda state, task_id: state.run_task(
                text, str(uri), team=False, task_id=task_id, selection=where
            )
        )

    @server.command(EXPLAIN_COMMAND)
    def explain(ls: AgentLanguageServer, uri: str, diagnostic: t.Diagnostic) -> dict[str, str]:
        def start(state: AgentState, task_id: str | None) -> dict[str, str]:
            from agent_lsp.task import TaskKind  # (loaded with the state, never before it)

            return state.fix(uri, diagnostic, TaskKind.EXPLAIN, task_id=task_id)

        return ls.start_task(start)

    @server.command(RUN_TASK_COMMAND)
    def run_task(ls: AgentLanguageServer, *args: Any) -> dict[str, str]:
        given = _first_dict(args)
        text = str(given.get("task", "")).strip()
        if not text:
            return {"error": 'agentLsp.runTask needs {"task": "..."}'}
        uri = given.get("uri")
        team = given.get("team")  # team mode (agent_lsp.team); unset: the `team.enabled` setting
        chosen = team if isinstance(team, bool) else None
        where = str(uri) if uri else None
        selected = selection_from(given.get("range")) if where else None
        return ls.start_task(
            lambda state, task_id: state.run_task(
                text, where, team=chosen, task_id=task_id, selection=selected
            )
        )

    @server.command(RUN_TESTS_COMMAND)
    async def run_tests(ls: AgentLanguageServer, *args: Any) -> dict[str, str]:
        uri = _first_dict(args).get("uri")
        return (await ls.load()).run_tests(str(uri) if uri else None)

    @server.command(APPLY)
    async def apply_proposal(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        return await (await ls.load()).apply_proposal(str(_first_dict(args).get("proposalId", "")))

    @server.command(REJECT)
    async def reject_proposal(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        return (await ls.load()).reject_proposal(str(_first_dict(args).get("proposalId", "")))

    @server.command(SHOW)
    async def show_proposal(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        return await (await ls.load()).show_proposal(str(_first_dict(args).get("proposalId", "")))

    @server.command(ANSWER)
    async def answer(ls: AgentLanguageServer, *args: Any) -> dict[str, bool]:
        given = _first_dict(args)
        choice, question = str(given.get("choice", "")), str(given.get("questionId", ""))
        return {"answered": (await ls.load()).questions.answer(question, choice)}

    @server.command("agentLsp.remember")
    async def remember(ls: AgentLanguageServer, *args: Any) -> dict[str, str]:
        given = _first_dict(args)
        return (await ls.load()).remember(str(given.get("note", "")), _uri(given))

    @server.command("agentLsp.showLog")
    async def show_log(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        return await (await ls.load()).show_log(_uri(_first_dict(args)))

    @server.command("agentLsp.memoryList")
    async def memory_list(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        return await (await ls.load()).memory("list", "", _uri(_first_dict(args)))

    @server.command("agentLsp.memoryShow")
    async def memory_show(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        given = _first_dict(args)
        return await (await ls.load()).memory("show", str(given.get("name", "")), _uri(given))

    @server.command("agentLsp.memoryForget")
    async def memory_forget(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        given = _first_dict(args)
        return await (await ls.load()).memory("forget", str(given.get("name", "")), _uri(given))

    @server.command("agentLsp.undo")
    async def undo(ls: AgentLanguageServer, *args: Any) -> dict[str, str]:
        given = _first_dict(args)
        steps = given.get("steps", 1)
        task_id = given.get("taskId")
        return (await ls.load()).undo(
            None if steps is None else int(steps), str(task_id) if task_id else None, _uri(given)
        )

    @server.command(CONTINUE)
    async def continue_task(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        given = _first_dict(args)
        task_id = given.get("taskId")
        state = await ls.load()
        hint = str(given.get("hint") or "")
        return await state.control.continue_task(
            str(task_id) if task_id else None, hint, _uri(given)
        )

    @server.command("agentLsp.improve")
    async def improve(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        given = _first_dict(args)
        request, yes = str(given.get("request", "")), given.get("yes") is True
        return (await ls.load()).improvements.start(request, _uri(given), yes=yes)

    @server.command("agentLsp.improveList")
    async def improve_list(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        return (await ls.load()).improvements.listing(_uri(_first_dict(args)))

    @server.command("agentLsp.improveRevert")
    async def improve_revert(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        given = _first_dict(args)
        return (await ls.load()).improvements.revert(str(given.get("id", "")), _uri(given))

    @server.command(STEER)
    async def steer(ls: AgentLanguageServer, *args: Any) -> dict[str, Any]:
        return (await ls.load()).control.steer(str(_first_dict(args).get("note", "")))

    @server.command(CANCEL_COMMAND)
    async def cancel(ls: AgentLanguageServer, *args: Any) -> dict[str, bool]:
        task_id = _first_dict(args).get("taskId")
        return {"cancelled": (await ls.load()).tasks.cancel(str(task_id) if task_id else None)}

    # The document store is pygls' (updated before these run); what the agent does on open, save
    # and new settings waits for it to load, in arrival order, without holding up requests.
    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: AgentLanguageServer, params: t.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        held_buffers(ls).opened(document.uri, document.text)
        state = await ls.load()
        state.control.opened(document.uri, document.text)  # its AGENT: lines were not typed
        state.opened(document.uri)

    # An edit to a file the editor had not opened is held until the editor reports the file.
    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AgentLanguageServer, params: t.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        held_buffers(ls).changed(uri)
        doc = ls.workspace.text_documents.get(uri)
        added = doc.take_added() if isinstance(doc, LineTextDocument) else []
        if ls.started is not None:  # AGENT: lines typed while a task runs
            ls.started.control.changed(uri, added)

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AgentLanguageServer, params: t.DidCloseTextDocumentParams) -> None:
        held_buffers(ls).changed(params.text_document.uri)
        if ls.started is not None:
            ls.started.control.closed(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: AgentLanguageServer, params: t.DidSaveTextDocumentParams) -> None:
        (await ls.load()).saved(params.text_document.uri)

    @server.feature(t.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(
        ls: AgentLanguageServer, params: t.DidChangeWatchedFilesParams
    ) -> None:
        (await ls.load()).files_changed([change.uri for change in params.changes])

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: AgentLanguageServer, params: t.DidChangeConfigurationParams
    ) -> None:
        (await ls.load()).apply_editor_settings(params.settings)

    @server.feature(t.SHUTDOWN)
    def shutdown(ls: AgentLanguageServer, params: None) -> None:
        if ls.started is not None:
            ls.started.shutdown()

    return server
