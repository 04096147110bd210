"""`create_server`: registers the LSP handlers; each one decodes, makes one core call, encodes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer

from agent_lsp import __version__
from agent_lsp.errors import AgentLspError
from agent_lsp.lsp.actions import CANCEL_COMMAND, FIX_COMMAND, code_actions
from agent_lsp.lsp.convert import diagnostic_info, uri_to_path
from agent_lsp.lsp.tasks import TaskManager
from agent_lsp.lsp.testruns import TestRuns, publish_test_diagnostics
from agent_lsp.seams import Model
from agent_lsp.session import Session
from agent_lsp.settings import Settings, load_settings
from agent_lsp.task import Task, TaskKind

log = logging.getLogger(__name__)

RUN_TASK_COMMAND = "agentLsp.runTask"
RUN_TESTS_COMMAND = "agentLsp.runTests"


class AgentLanguageServer(LanguageServer):
    """pygls server plus the agent's state for one workspace."""

    def __init__(self, model_factory: Callable[[Settings], Model] | None = None) -> None:
        super().__init__("agent-lsp", __version__)
        self.model_factory = model_factory
        self.session: Session | None = None
        self.tasks = TaskManager(self)
        self.test_runs = TestRuns(self)

    def start_session(self, root: Path, options: Any) -> None:
        loaded = load_settings(root, options if isinstance(options, dict) else None)
        for warning in loaded.warnings:
            self.window_log_message(
                t.LogMessageParams(type=t.MessageType.Warning, message=f"agent-lsp: {warning}")
            )
        model = self.model_factory(loaded.settings) if self.model_factory else None
        session = Session(root, loaded.settings, model)
        session.diagnostics.listeners.append(
            lambda paths: publish_test_diagnostics(self, session, paths)
        )
        self.session = session

    def note_editor_diagnostics(self, uri: str, diagnostics: Sequence[t.Diagnostic]) -> None:
        """Remember what the editor showed, for the get_diagnostics tool."""
        path = uri_to_path(uri)
        if path is not None and self.session is not None:
            seen = [diagnostic_info(d) for d in diagnostics if d.source != "agent-lsp"]
            self.session.diagnostics.seen_in_editor(path.resolve(), seen)

    def apply_editor_settings(self, options: Any) -> None:
        """workspace/didChangeConfiguration: re-merge every source with the new editor layer."""
        session = self.require_session()
        section = options.get("agentLsp", options) if isinstance(options, dict) else None
        loaded = load_settings(session.root, section if isinstance(section, dict) else None)
        for warning in loaded.warnings:
            self.window_log_message(
                t.LogMessageParams(type=t.MessageType.Warning, message=f"agent-lsp: {warning}")
            )
        session.update_settings(loaded.settings)

    def require_session(self) -> Session:
        if self.session is None:
            raise AgentLspError("the server is not initialized")
        return self.session

    def start_task(self, task: Task) -> dict[str, str]:
        try:
            task_id = self.tasks.start(task, self.require_session())
        except AgentLspError as exc:
            self.window_show_message(
                t.ShowMessageParams(type=t.MessageType.Warning, message=f"agent-lsp: {exc}")
            )
            return {"error": str(exc)}
        return {"taskId": task_id}


def _root_of(params: t.InitializeParams) -> Path:
    for uri in [f.uri for f in params.workspace_folders or []] + [params.root_uri or ""]:
        path = uri_to_path(uri) if uri else None
        if path is not None:
            return path
    return Path(params.root_path) if params.root_path else Path.cwd()


def create_server(model_factory: Callable[[Settings], Model] | None = None) -> AgentLanguageServer:
    """A new server; `model_factory` replaces the configured model (demo, tests)."""
    server = AgentLanguageServer(model_factory)

    @server.feature(t.INITIALIZE)
    def initialize(ls: AgentLanguageServer, params: t.InitializeParams) -> None:
        ls.start_session(_root_of(params), params.initialization_options)

    @server.feature(
        t.TEXT_DOCUMENT_CODE_ACTION,
        t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix]),
    )
    def code_action(ls: AgentLanguageServer, params: t.CodeActionParams) -> list[t.CodeAction]:
        only = params.context.only
        if only and not any(str(k).startswith("quickfix") for k in only):
            return []
        ls.note_editor_diagnostics(params.text_document.uri, params.context.diagnostics)
        return code_actions(
            params.text_document.uri, params.context.diagnostics, ls.tasks.running_id
        )

    @server.command(FIX_COMMAND)
    def fix(ls: AgentLanguageServer, uri: str, diagnostic: t.Diagnostic) -> dict[str, str]:
        path = uri_to_path(uri)
        relative = _relative(ls.require_session().root, path) if path else None
        task = Task(
            kind=TaskKind.FIX, instruction="", path=relative, diagnostic=diagnostic_info(diagnostic)
        )
        return ls.start_task(task)

    @server.command(RUN_TASK_COMMAND)
    def run_task(ls: AgentLanguageServer, args: Any) -> dict[str, str]:
        text = str(args.get("task", "")).strip() if isinstance(args, dict) else ""
        if not text:
            return {"error": 'agentLsp.runTask needs {"task": "..."}'}
        return ls.start_task(Task(kind=TaskKind.TASK, instruction=text))

    @server.command(RUN_TESTS_COMMAND)
    def run_tests(ls: AgentLanguageServer, *args: Any) -> dict[str, str]:
        first = args[0] if args else None
        uri = first.get("uri") if isinstance(first, dict) else None
        path = uri_to_path(str(uri)) if uri else None
        return ls.test_runs.start(ls.require_session(), path)

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: AgentLanguageServer, params: t.DidSaveTextDocumentParams) -> None:
        if ls.session is not None and ls.session.settings.tests.run_on_save:
            ls.test_runs.start(ls.session, None)

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: AgentLanguageServer, params: t.DidChangeConfigurationParams
    ) -> None:
        ls.apply_editor_settings(params.settings)

    @server.command(CANCEL_COMMAND)
    def cancel(ls: AgentLanguageServer, *args: Any) -> dict[str, bool]:
        first = args[0] if args else None
        task_id = first.get("taskId") if isinstance(first, dict) else None
        return {"cancelled": ls.tasks.cancel(str(task_id) if task_id else None)}

    @server.feature(t.SHUTDOWN)
    def shutdown(ls: AgentLanguageServer, params: None) -> None:
        ls.tasks.cancel()
        if ls.session is not None:
            ls.session.close()

    return server


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)
