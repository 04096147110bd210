"""`LspEditorChannel`: the core's EditorChannel over LSP (buffers, applyEdit, progress, prompts)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as t
from pygls.exceptions import JsonRpcException

from agent_lsp.errors import EditRejectedError
from agent_lsp.fileio import atomic_write, read_disk_text
from agent_lsp.lsp.convert import resolved_path
from agent_lsp.lsp.held import Held, held_buffers, stamp_of
from agent_lsp.lsp.textedit import minimal_edits
from agent_lsp.messages import AgentEvent, EventKind
from agent_lsp.safety.policy import visible

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer
    from pygls.workspace import TextDocument

    from agent_lsp.lsp.proposals import ProposalStore
    from agent_lsp.lsp.questions import Questions

log = logging.getLogger(__name__)


# Clients that answer window/showMessageRequest without advertising it (Eglot declares no
# `window.showMessage` capability, yet prompts with completing-read).
PROMPTS_UNDECLARED = ("eglot", "emacs")


def supports_prompts(server: LanguageServer) -> bool:
    window = server.client_capabilities.window
    if window is not None and window.show_message is not None:
        return True
    name = str(getattr(server, "client_name", "")).lower()
    return any(client in name for client in PROMPTS_UNDECLARED)


# Clients that declare workspace/applyEdit but do not load a file they have not opened into a
# buffer for it (an edit to such a file goes to disk instead). None known: VS Code, Neovim,
# Eglot, lsp-mode and Helix all load it (see docs/editors.md).
CLOSED_FILES_ON_DISK: tuple[str, ...] = ()


def edits_closed_files(server: LanguageServer) -> bool:
    """Whether an edit to a file the editor has not opened goes to the editor (which loads it
    into a buffer, unsaved) rather than to disk: the client applies workspace edits and is not
    known to drop edits to files it has not opened."""
    workspace = server.client_capabilities.workspace
    if not (workspace and workspace.apply_edit):
        return False
    name = str(getattr(server, "client_name", "")).lower()
    return not any(client in name for client in CLOSED_FILES_ON_DISK)


class LspEditorChannel:
    def __init__(
        self,
        server: LanguageServer,
        edit_timeout: float,
        on_event: Callable[[AgentEvent], None],
        proposals: ProposalStore | None = None,
        questions: Questions | None = None,
        focus_uri: str | None = None,
        ask_timeout: float = 120.0,
    ) -> None:
        self.ask_timeout = ask_timeout  # seconds a question waits for the user (askTimeout)
        self.questions = questions
        self.focus_uri = focus_uri  # where a question diagnostic goes (the task's file)
        self.server = server
        self.edit_timeout = edit_timeout  # when the task says that it waits for the editor
        self.on_event = on_event
        self.proposals = proposals  # set: review mode, edits become proposals
        self.held = held_buffers(server)

    def _open_documents(self) -> dict[Path, TextDocument]:
        docs: dict[Path, TextDocument] = {}
        for uri, doc in self.server.workspace.text_documents.items():
            path = resolved_path(uri)
            if path is not None:
                docs[path] = doc
        return docs

    def buffers(self) -> Mapping[Path, str]:
        texts = {path: doc.source for path, doc in self._open_documents().items()}
        texts.update(self.held.texts())  # edited in the editor, not (yet) reported by it
        if self.proposals is not None:  # the agent sees (and tests) what it proposed
            texts.update(self.proposals.texts())
        return texts

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        """The edit goes to the editor's buffer (unsaved), for a file it has open and, where
        the client can, for one it has not (it loads the file); it waits as long as the
        editor takes (a user reviewing the edit), saying that it waits; cancellable."""
        if self.proposals is not None:
            self.proposals.propose(path, new_text, label)
            return
        doc = self._open_documents().get(path)
        held = self.held.get(path)
        if doc is not None and held is None:
            await self._edit_open(doc, path, new_text, label)
            return
        exists = held is not None or await asyncio.to_thread(path.is_file)
        if not exists or not edits_closed_files(self.server):  # a new file, or no client help
            await asyncio.to_thread(atomic_write, path, new_text)
            return
        await self._edit_closed(path, held, new_text, label)

    async def _edit_open(self, doc: TextDocument, path: Path, new_text: str, label: str) -> None:
        old_text, version = doc.source, doc.version
        edits = minimal_edits(old_text, new_text, doc.position_codec.client_num_units)
        if not edits:
            return
        result = await self._send_edit(self._workspace_edit(doc.uri, version, edits), path, label)
        if not result.applied:
            reason = result.failure_reason or "no reason given"
            raise EditRejectedError(f"the editor rejected the edit to {path.name}: {reason}")
        await self._wait_for_text(doc.uri, path, old_text, new_text)

    async def _edit_closed(self, path: Path, held: Held | None, new_text: str, label: str) -> None:
        """A versionless edit computed from the text the editor will load: the file on disk,
        or the text a previous edit left in the editor's buffer."""
        if held is not None:
            old_text, stamp = held.text, held.stamp
        else:
            stamp = stamp_of(path)
            old_text = await asyncio.to_thread(read_disk_text, path)
        units = self.server.workspace.position_codec.client_num_units
        edits = minimal_edits(old_text, new_text, units)
        if not edits:
            return
        uri = path.as_uri()
        result = await self._send_edit(self._workspace_edit(uri, None, edits), path, label)
        if not result.applied:
            reason = result.failure_reason or "no reason given"
            raise EditRejectedError(f"the editor rejected the edit to {path.name}: {reason}")
        doc = self._open_documents().get(path)
        if doc is not None and doc.source == new_text:  # opened with the edit already
            return
        self.held.hold(path, new_text, stamp)
        if doc is not None:  # opened meanwhile with the text before the edit
            self.held.opened(doc.uri, doc.source)

    def _workspace_edit(
        self, uri: str, version: int | None, edits: Sequence[t.TextEdit]
    ) -> t.WorkspaceEdit:
        """Plain edits, never with a change annotation that asks for confirmation: VS Code
        would open its refactor preview with the change unticked (review mode is proposals)."""
        caps = self.server.client_capabilities.workspace
        edit_caps = caps.workspace_edit if caps else None
        if not (edit_caps and edit_caps.document_changes):
            return t.WorkspaceEdit(changes={uri: list(edits)})
        document = t.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return t.WorkspaceEdit(
            document_changes=[t.TextDocumentEdit(text_document=document, edits=list(edits))]
        )

    def _waiting(self, message: str) -> None:
        self.on_event(AgentEvent(kind=EventKind.MESSAGE, message=message))

    async def _send_edit(
        self, edit: t.WorkspaceEdit, path: Path, label: str
    ) -> t.ApplyWorkspaceEditResult:
        """The editor's answer, however long it takes: an editor that asks the user to confirm
        (Eglot's prompt, a preview) answers when the user decides. After `edit_timeout` the
        task says that it waits; cancelling the task ends the wait."""
        params = t.ApplyWorkspaceEditParams(edit=edit, label=label)
        future = asyncio.ensure_future(self.server.workspace_apply_edit_async(params))
        try:
            try:
                return await asyncio.wait_for(asyncio.shield(future), self.edit_timeout)
            except TimeoutError:
                self._waiting(
                    f"waiting for the editor to apply the edit to {path.name} (confirm it "
                    "there, or cancel the task)"
                )
                return await future
        except JsonRpcException as exc:
            raise EditRejectedError(f"the editor refused the edit: {exc}") from exc
        except asyncio.CancelledError:
            future.cancel()
            raise

    async def _wait_for_text(self, uri: str, path: Path, old: str, expected: str) -> None:
        """Clients send didChange after applying (Eglot ~0.5 s later): wait for the new text.
        It waits while the buffer still holds the old text (saying so after `edit_timeout`);
        once the buffer changed, other text that stays `edit_timeout` unchanged (the user typed
        meanwhile) is reported as such."""
        loop = asyncio.get_running_loop()
        said = False
        last_text, settled_at = old, loop.time()
        while True:
            doc = self.server.workspace.text_documents.get(uri)
            if doc is None or doc.source == expected:
                return
            now = loop.time()
            if doc.source != last_text:
                last_text, settled_at = doc.source, now
            elif doc.source != old and now - settled_at > self.edit_timeout:
                raise EditRejectedError(
                    f"the editor applied the edit to {path.name}, but its buffer holds other "
                    "text (edited meanwhile?); read the file again before retrying"
                )
            elif doc.source == old and now - settled_at > self.edit_timeout and not said:
                said = True
                self._waiting(f"waiting for the editor to show the edit to {path.name}")
            await asyncio.sleep(0.02)

    async def _ask_by_diagnostic(self, question: str, options: Sequence[str]) -> str | None:
        documents = self.server.workspace.text_documents
        uri = self.focus_uri if self.focus_uri in documents else next(iter(documents), None)
        if self.questions is None or uri is None:
            return None
        return await self.questions.ask(uri, 0, question, options, self.ask_timeout)

    async def _ask_in_words(self, question: str) -> str | None:
        """The question with its id, answered by `agentLsp.answer` {questionId, choice: your
        words} (never by a steer note: that goes to the next model request)."""

        def show(question_id: str | None) -> None:
            how = (
                f'answer with the command agentLsp.answer {{"questionId": "{question_id}", '
                '"choice": "your answer"}'
                if question_id is not None
                else "no answer can be taken here"
            )
            self.server.window_show_message(
                t.ShowMessageParams(
                    type=t.MessageType.Info, message=f"agent-lsp asks: {question} ({how})"
                )
            )

        if self.questions is None:  # no store to answer into (not a task's channel)
            show(None)
            return None
        return await self.questions.ask_in_words(show, self.ask_timeout)

    async def report(self, event: AgentEvent) -> None:
        self.on_event(event)

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        """The whole question (escaped: control and invisible characters shown as \\uXXXX, as
        the permission gate writes them), as a prompt, else as a diagnostic with answers; a
        question in words with its id, for `agentLsp.answer`."""
        question = visible(question)
        if not options:  # in words: through agentLsp.answer with the question's id
            return await self._ask_in_words(question)
        if not supports_prompts(self.server):
            return await self._ask_by_diagnostic(question, options)
        params = t.ShowMessageRequestParams(
            type=t.MessageType.Info,
            message=question,
            actions=[t.MessageActionItem(title=o) for o in options],
        )
        future = asyncio.ensure_future(self.server.window_show_message_request_async(params))
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), self.ask_timeout)
        except (TimeoutError, JsonRpcException):
            return None
        return answer.title if answer is not None and answer.title in options else None
