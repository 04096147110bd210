"""The agent's state behind the LSP handlers: the project session, tasks, test runs.

Imported on first use (after the `initialize` answer), so that start-up stays as light as a bare
pygls server: pydantic, the core and the adapters load here, not at start-up."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types as t

from agent_lsp.config.schema import Settings
from agent_lsp.config.settings import load_settings
from agent_lsp.errors import AgentLspError, EditRejectedError
from agent_lsp.lsp.agent_thread import CrossLoopChannel
from agent_lsp.lsp.channel import LspEditorChannel
from agent_lsp.lsp.convert import diagnostic_info, resolved_path, uri_to_path
from agent_lsp.lsp.improve import Improvements
from agent_lsp.lsp.lintruns import LintRuns
from agent_lsp.lsp.proposals import ProposalStore
from agent_lsp.lsp.publisher import AgentDiagnostics
from agent_lsp.lsp.questions import Questions
from agent_lsp.lsp.steer import UserControl
from agent_lsp.lsp.suggestions import Suggestions
from agent_lsp.lsp.tasks import TaskManager
from agent_lsp.lsp.team_resume import offer_team_resume
from agent_lsp.lsp.testruns import TestRuns, publish_test_diagnostics
from agent_lsp.seams import Model
from agent_lsp.session import Session
from agent_lsp.symbols.worker import ProcessExtractor
from agent_lsp.task import Selection, Task, TaskKind

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer


class AgentState:
    """One session per workspace folder (multi-root); tasks, proposals and questions shared."""

    def __init__(
        self,
        server: LanguageServer,
        roots: Sequence[Path],
        options: Any,
        model_factory: Callable[[Settings], Model] | None,
    ) -> None:
        self.server = server
        self._home_thread = threading.get_ident()
        try:
            self._home: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # built outside a loop (tests): everything runs on this thread
            self._home = None
        # initializationOptions are the user's (their editor config); what the editor sends
        # later may come from the workspace's own settings: it may only restrict an untrusted
        # workspace (see load_settings).
        self.options = options if isinstance(options, dict) else None
        self.updates: dict[str, Any] | None = None
        self._told: set[str] = set()  # warnings already logged: each is shown once
        self.model_factory = model_factory
        self.publisher = AgentDiagnostics(server)
        self.sessions: dict[Path, Session] = {}
        for root in roots:
            self.add_folder(root)
        self.proposals = ProposalStore(server, self.session.root, self.publisher)
        self.questions = Questions(self.publisher)
        self.tasks = TaskManager(server, self.proposals, self.questions)
        store = ProposalStore(server, self.session.root, self.publisher, markers=False)
        self.suggestions = Suggestions(self, store)
        self.test_runs = TestRuns(server, self.tasks.worker)
        self._jobs: set[asyncio.Task[None]] = set()
        self.lints = LintRuns(server, self.publisher, self.tasks.worker)
        self.control = UserControl(self)  # continue, steer, AGENT: lines
        self.improvements = Improvements(self)  # agentLsp.improve, improveList, improveRevert

    @property
    def session(self) -> Session:
        """The first workspace folder's session (free-text tasks without a file go here)."""
        return next(iter(self.sessions.values()))

    def session_for(self, uri: str | None) -> Session:
        resolved = resolved_path(uri) if uri else None
        if resolved is not None:
            owners = [r for r in self.sessions if resolved.is_relative_to(r)]
            if owners:
                return self.sessions[max(owners, key=lambda r: len(r.parts))]
        return self.session

    def add_folder(self, root: Path) -> None:
        root = root.resolve()
        if root in self.sessions:
            return
        loaded = load_settings(root, self.options, editor_updates=self.updates)
        self._log_warnings(loaded.warnings)
        model = self.model_factory(loaded.settings) if self.model_factory else None
        session = Session(root, loaded.settings, model, extractor=ProcessExtractor())
        session.diagnostic_check = getattr(self.server, "diagnostic_check", None)
        session.diagnostics.listeners.append(
            lambda paths: self.at_home(
                publish_test_diagnostics, self.server, self.publisher, session, paths
            )
        )
        self.sessions[root] = session

    def remove_folder(self, root: Path) -> None:
        session = self.sessions.get(root.resolve())
        if session is not None and len(self.sessions) > 1:
            session.close()
            del self.sessions[root.resolve()]

    def _log_warnings(self, warnings: Sequence[str]) -> None:
        for warning in warnings:
            if warning in self._told:
                continue
            self._told.add(warning)
            self.server.window_log_message(
                t.LogMessageParams(type=t.MessageType.Warning, message=f"agent-lsp: {warning}")
            )

    def note_editor_diagnostics(self, uri: str, diagnostics: Sequence[t.Diagnostic]) -> None:
        """Remember what the editor showed, for the get_diagnostics tool."""
        path = resolved_path(uri)
        if path is not None:
            seen = [diagnostic_info(d) for d in diagnostics if d.source != "agent-lsp"]
            self.session_for(uri).diagnostics.seen_in_editor(path, seen)
        self.suggestions.on_diagnostics(uri, diagnostics)

    def apply_editor_settings(self, options: Any) -> None:
        """workspace/didChangeConfiguration, workspace/configuration: re-merge every source with
        the new editor layer (in an untrusted workspace it may restrict, never widen)."""
        section = options.get("agentLsp", options) if isinstance(options, dict) else None
        if isinstance(section, dict):
            self.updates = cast("dict[str, Any]", section)
        for session in self.sessions.values():
            loaded = load_settings(session.root, self.options, editor_updates=self.updates)
            self._log_warnings(loaded.warnings)
            session.update_settings(loaded.settings)

    def start_task(
        self,
        task: Task,
        session: Session,
        *,
        hint: str | None = None,
        continues: str | None = None,
        task_id: str | None = None,
        team: bool = False,
    ) -> dict[str, str]:
        """`hint`: continue the stopped task `continues` (see `steer.UserControl`); `team`:
        run it in team mode."""
        try:
            task_id = self.tasks.start(
                task, session, hint=hint, continues=continues, task_id=task_id, team=team
            )
        except AgentLspError as exc:
            self.server.window_show_message(
                t.ShowMessageParams(type=t.MessageType.Warning, message=f"agent-lsp: {exc}")
            )
            return {"error": str(exc)}
        return {"taskId": task_id}

    def fix(
        self,
        uri: str,
        diagnostic: t.Diagnostic,
        kind: TaskKind = TaskKind.FIX,
        task_id: str | None = None,
        selection: Selection | None = None,
    ) -> dict[str, str]:
        """`task_id`: the id already given to the editor (asked while the agent loaded);
        `selection`: the user's cursor or selection in the file."""
        path = uri_to_path(uri)
        session = self.session_for(uri)
        relative = _relative(session.root, path) if path else None
        info = diagnostic_info(diagnostic)
        where = selection if relative else None
        task = Task(kind=kind, instruction="", path=relative, diagnostic=info, selection=where)
        return self.start_task(task, session, task_id=task_id)

    def start_suggestion(
        self, uri: str, diagnostic: t.Diagnostic, suggestions: Suggestions, key: Any
    ) -> None:
        """A fix prepared in the background, kept as a suggestion (the editor is not touched)."""
        path = uri_to_path(uri)
        if path is None:
            return
        session = self.session_for(uri)
        task = Task(
            kind=TaskKind.FIX,
            instruction="",
            path=_relative(session.root, path),
            diagnostic=diagnostic_info(diagnostic),
            suggestion=True,
        )
        self.tasks.start(
            task,
            session,
            proposals=suggestions.store,
            quiet=True,
            on_done=lambda: suggestions.record(key, path.resolve()),
        )

    def run_task(
        self,
        text: str,
        uri: str | None = None,
        team: bool | None = None,
        task_id: str | None = None,
        selection: Selection | None = None,
    ) -> dict[str, str]:
        """A free-text task, in the folder of `uri` (the file the user is in) if given; in team
        mode when `team` says so or, not given, the `team.enabled` setting does; `selection`:
        the cursor or the selected text in that file."""
        session = self.session_for(uri)
        team = session.settings.team.enabled if team is None else team
        path = uri_to_path(uri) if uri else None
        relative = _relative(session.root, path) if path else None
        where = selection if relative else None
        task = Task(kind=TaskKind.TASK, instruction=text, path=relative, selection=where)
        return self.start_task(task, session, team=team, task_id=task_id)

    def run_tests(self, uri: str | None) -> dict[str, str]:
        path = uri_to_path(uri) if uri else None
        session = self.session_for(uri)
        target = path if path is not None and path.resolve() != session.root else None
        return self.test_runs.start(session, target)

    def saved(self, uri: str) -> None:
        session = self.session_for(uri)
        self.files_changed([uri])
        if session.settings.tests.run_on_save:
            self.test_runs.start(session, None)
        self.lints.start(session)

    def opened(self, uri: str) -> None:
        self.lints.start(self.session_for(uri))

    def files_changed(self, uris: Sequence[str]) -> None:
        """Files saved or reported by the editor's watcher: each session's symbol index
        re-reads just those (in a thread), not the whole tree; its shadow copy copies them
        again at the next test run."""
        changed: dict[Path, tuple[Session, list[Path]]] = {}
        for uri in uris:
            if (path := uri_to_path(uri)) is not None:
                session = self.session_for(uri)
                changed.setdefault(session.root, (session, []))[1].append(path)
        for session, paths in changed.values():
            session.files_changed([_relative(session.root, path) for path in paths])
            self.background(_reindex(session, paths))

    async def apply_proposal(self, proposal_id: str) -> dict[str, Any]:
        proposal = self.proposals.find(proposal_id)
        if proposal is None:
            return self._tell(t.MessageType.Warning, f"no proposal {proposal_id} (already done?)")
        if self.proposals.stale(proposal):
            return self._tell(
                t.MessageType.Warning,
                f"the proposal for {proposal.path.name} is stale: the text changed since it was "
                "made; reject it and ask the agent again",
            )
        edit = self.proposals.edit_for(proposal)
        if edit is None:  # not open: the editor loads it (where it can), else the file itself
            session = self.session_for(proposal.uri)
            channel = LspEditorChannel(self.server, session.settings.edit_timeout, lambda _: None)
            try:
                await channel.apply_edit(
                    proposal.path, proposal.new_text, f"agent-lsp: {proposal.label}"
                )
            except EditRejectedError as exc:
                return self._tell(t.MessageType.Warning, str(exc))
        else:
            params = t.ApplyWorkspaceEditParams(edit=edit, label=f"agent-lsp: {proposal.label}")
            result = await self.server.workspace_apply_edit_async(params)
            if not result.applied:
                reason = result.failure_reason or "no reason given"
                return self._tell(t.MessageType.Warning, f"the editor refused the change: {reason}")
        self.proposals.drop(proposal)
        return self._tell(t.MessageType.Info, f"applied the change to {proposal.path.name}")

    def reject_proposal(self, proposal_id: str) -> dict[str, Any]:
        proposal = self.proposals.find(proposal_id)
        if proposal is not None:
            self.proposals.drop(proposal)
        return {"rejected": proposal is not None}

    async def show_proposal(self, proposal_id: str) -> dict[str, Any]:
        proposal = self.proposals.find(proposal_id)
        if proposal is None:
            return self._tell(t.MessageType.Warning, f"no proposal {proposal_id}")
        window = self.server.client_capabilities.window
        if window and window.show_document and window.show_document.support:
            await asyncio.to_thread(self.proposals.save, proposal)  # the diff file, current
            uri = self.proposals.diff_path(proposal).as_uri()
            shown = await self.server.window_show_document_async(
                t.ShowDocumentParams(uri=uri, take_focus=True)
            )
            if shown.success:
                return {"shown": uri}
        diff = proposal.diff(self.session_for(proposal.uri).root)
        self.server.window_log_message(t.LogMessageParams(type=t.MessageType.Info, message=diff))
        return self._tell(t.MessageType.Info, diff[:2000] or "no difference")

    def _tell(self, kind: t.MessageType, message: str) -> dict[str, Any]:
        self.server.window_show_message(
            t.ShowMessageParams(type=kind, message=f"agent-lsp: {message}")
        )
        return {"message": message}

    # -- memory, logs, undo, resume --------------------------------------------------------
    def remember(self, note: str, uri: str | None) -> dict[str, str]:
        if not note.strip():
            return {"error": 'agentLsp.remember needs {"note": "..."}'}
        session = self.session_for(uri)

        async def save() -> None:
            try:
                result = await self.tasks.worker.run(session.remember(note))  # the model's loop
            except AgentLspError as exc:
                self._tell(t.MessageType.Warning, str(exc))
                return
            where = f" ({result.path})" if result.path else ""
            self._tell(t.MessageType.Info, f"{result.message}{where}")

        self.background(save())
        return {"status": "accepted"}

    async def show_log(self, uri: str | None) -> dict[str, Any]:
        path = await asyncio.to_thread(lambda: self.session_for(uri).log_path)
        window = self.server.client_capabilities.window
        if window and window.show_document and window.show_document.support:
            await self.server.window_show_document_async(
                t.ShowDocumentParams(uri=path.as_uri(), take_focus=True)
            )
        else:
            self._tell(t.MessageType.Info, f"session log: {path} (agent-lsp log --follow)")
        return {"path": str(path)}

    async def memory(self, action: str, name: str, uri: str | None) -> dict[str, Any]:
        session = self.session_for(uri)
        try:
            if action == "list":
                return {"entries": [e.model_dump() for e in await session.memory_list()]}
            if action == "show":
                return {"text": await session.memory_show(name)}
            return {"forgotten": await session.memory_forget(name)}
        except AgentLspError as exc:
            return self._tell(t.MessageType.Warning, str(exc))

    def undo(self, steps: int | None, task_id: str | None, uri: str | None) -> dict[str, str]:
        session = self.session_for(uri)

        async def revert() -> None:
            channel = LspEditorChannel(self.server, session.settings.edit_timeout, lambda _: None)
            remote = CrossLoopChannel(channel, asyncio.get_running_loop())
            try:
                report = await self.tasks.worker.run(session.undo(remote, steps, task_id))
            except AgentLspError as exc:
                self._tell(t.MessageType.Warning, str(exc))
                return
            self._tell(t.MessageType.Info, report.message())

        self.background(revert())
        return {"status": "accepted"}

    async def offer_resume(self) -> None:
        """A task cut short by a crash or restart (a team task also by a cancel): ask whether
        to go on with it."""
        session = self.session
        if await offer_team_resume(self.server, self.tasks, session):
            return  # one offer at a time: the team task's first
        warnings: list[str] = []
        offer = await asyncio.to_thread(session.pending_resume, warnings)
        for warning in warnings:
            self._tell(t.MessageType.Warning, warning)
        if offer is None:
            return
        what = offer.task.instruction or offer.title  # whole: the question decides what runs
        question = f"agent-lsp: the task “{what}” was interrupted at step {offer.step}. Resume it?"
        channel = LspEditorChannel(self.server, session.settings.edit_timeout, lambda _: None)
        answer = await channel.ask(question, ["Resume", "Discard"])
        if answer == "Resume":
            self.tasks.start(offer.task, session, resume=True)
        elif answer == "Discard":
            session.discard_resume()

    def at_home(self, function: Callable[..., object], *args: Any) -> None:
        """Call `function` on the server's loop (pygls is not thread-safe): at once when called
        there, else soon (from the agent thread)."""
        if threading.get_ident() == self._home_thread or self._home is None:
            function(*args)
        else:
            self._home.call_soon_threadsafe(function, *args)

    def background(self, job: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(job)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    def shutdown(self) -> None:
        self.tasks.cancel(by_user=False)
        for session in self.sessions.values():
            session.close()
        self.tasks.worker.close()


async def _reindex(session: Session, paths: list[Path]) -> None:
    await asyncio.to_thread(session.symbols.refresh_paths, paths)


def _relative(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)
