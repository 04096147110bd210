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
from agent_lsp.fileio import atomic_write
from agent_lsp.lsp.convert import resolved_path
from agent_lsp.lsp.textedit import minimal_edit
from agent_lsp.messages import AgentEvent
from agent_lsp.permissions import visible

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer
    from pygls.workspace import TextDocument

    from agent_lsp.lsp.proposals import ProposalStore
    from agent_lsp.lsp.questions import Questions

log = logging.getLogger(__name__)
CONFIRM = "agent-lsp.confirm"


# Clients that answer window/showMessageRequest without advertising it (Eglot declares no
# `window.showMessage` capability, yet prompts with completing-read).
PROMPTS_UNDECLARED = ("eglot", "emacs")


def supports_prompts(server: LanguageServer) -> bool:
    window = server.client_capabilities.window
    if window is not None and window.show_message is not None:
        return True
    name = str(getattr(server, "client_name", "")).lower()
    return any(client in name for client in PROMPTS_UNDECLARED)


class LspEditorChannel:
    def __init__(
        self,
        server: LanguageServer,
        edit_timeout: float,
        on_event: Callable[[AgentEvent], None],
        proposals: ProposalStore | None = None,
        questions: Questions | None = None,
        focus_uri: str | None = None,
    ) -> None:
        self.questions = questions
        self.focus_uri = focus_uri  # where a question diagnostic goes (the task's file)
        self.server = server
        self.edit_timeout = edit_timeout
        self.on_event = on_event
        self.proposals = proposals  # set: review mode, edits become proposals

    def _open_documents(self) -> dict[Path, TextDocument]:
        docs: dict[Path, TextDocument] = {}
        for uri, doc in self.server.workspace.text_documents.items():
            path = resolved_path(uri)
            if path is not None:
                docs[path] = doc
        return docs

    def buffers(self) -> Mapping[Path, str]:
        texts = {path: doc.source for path, doc in self._open_documents().items()}
        if self.proposals is not None:  # the agent sees (and tests) what it proposed
            texts.update(self.proposals.texts())
        return texts

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        if self.proposals is not None:
            self.proposals.propose(path, new_text, label)
            return
        doc = self._open_documents().get(path)
        if doc is None:
            await asyncio.to_thread(atomic_write, path, new_text)
            return
        old_text, version = doc.source, doc.version
        edit = minimal_edit(old_text, new_text, doc.position_codec.client_num_units)
        if edit is None:
            return
        result = await self._send_edit(self._workspace_edit(doc.uri, version, edit), label)
        if not result.applied:
            reason = result.failure_reason or "no reason given"
            raise EditRejectedError(f"the editor rejected the edit to {path.name}: {reason}")
        await self._wait_for_text(doc.uri, new_text)

    def _workspace_edit(self, uri: str, version: int | None, edit: t.TextEdit) -> t.WorkspaceEdit:
        caps = self.server.client_capabilities.workspace
        edit_caps = caps.workspace_edit if caps else None
        if not (edit_caps and edit_caps.document_changes):
            return t.WorkspaceEdit(changes={uri: [edit]})
        document = t.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        if not edit_caps.change_annotation_support:
            return t.WorkspaceEdit(
                document_changes=[t.TextDocumentEdit(text_document=document, edits=[edit])]
            )
        # The client can ask the user to confirm (VS Code: refactor preview).
        annotated = t.AnnotatedTextEdit(
            range=edit.range, new_text=edit.new_text, annotation_id=CONFIRM
        )
        return t.WorkspaceEdit(
            document_changes=[t.TextDocumentEdit(text_document=document, edits=[annotated])],
            change_annotations={
                CONFIRM: t.ChangeAnnotation(label="agent-lsp edit", needs_confirmation=True)
            },
        )

    async def _send_edit(self, edit: t.WorkspaceEdit, label: str) -> t.ApplyWorkspaceEditResult:
        params = t.ApplyWorkspaceEditParams(edit=edit, label=label)
        future = asyncio.ensure_future(self.server.workspace_apply_edit_async(params))
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.edit_timeout)
        except TimeoutError:
            raise EditRejectedError(
                f"the editor did not answer the edit within {self.edit_timeout:.0f} s"
            ) from None
        except JsonRpcException as exc:
            raise EditRejectedError(f"the editor refused the edit: {exc}") from exc

    async def _wait_for_text(self, uri: str, expected: str) -> None:
        """Clients send didChange after applying (Eglot ~0.5 s later): wait for the new text."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.edit_timeout
        while loop.time() < deadline:
            doc = self.server.workspace.text_documents.get(uri)
            if doc is None or doc.source == expected:
                return
            await asyncio.sleep(0.02)
        name = uri.rsplit("/", 1)[-1]
        raise EditRejectedError(
            f"the editor reported the edit to {name} as applied, but the buffer did not change "
            f"within {self.edit_timeout:.0f} s (declined, or still under review?); read the "
            "file again before retrying"
        )

    async def _ask_by_diagnostic(self, question: str, options: Sequence[str]) -> str | None:
        documents = self.server.workspace.text_documents
        uri = self.focus_uri if self.focus_uri in documents else next(iter(documents), None)
        if self.questions is None or uri is None:
            return None
        return await self.questions.ask(uri, 0, question, options)

    async def report(self, event: AgentEvent) -> None:
        self.on_event(event)

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        """The whole question (escaped: control and invisible characters shown as \\uXXXX, as
        the permission gate writes them), as a prompt, else as a diagnostic with answers."""
        question = visible(question)
        if not supports_prompts(self.server):
            return await self._ask_by_diagnostic(question, options)
        params = t.ShowMessageRequestParams(
            type=t.MessageType.Info,
            message=question,
            actions=[t.MessageActionItem(title=o) for o in options],
        )
        future = asyncio.ensure_future(self.server.window_show_message_request_async(params))
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), 120)
        except (TimeoutError, JsonRpcException):
            return None
        return answer.title if answer is not None and answer.title in options else None
