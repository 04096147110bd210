"""A pytest-lsp client that behaves like an editor: holds buffers, applies server edits,
sends didChange, and records what the server showed."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Union

from lsprotocol import types as t
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from agent_lsp.lsp.convert import uri_to_path
from tests.e2e.textops import apply_text_edits

# Hang guards, not timing assertions: on a shared CI machine (a load of 5 on 2 cores) loading
# the agent and a test run take many times what they take on an idle one.
MESSAGE_WAIT = 240.0
REQUEST_WAIT = 120.0  # the first model request of a task (the agent loads, indexes first)
PROFILES = {"vscode": "visual-studio-code", "neovim": "neovim@v0.7.0", "emacs": "emacs"}
# Helix 25.07: versioned edits, but no showMessageRequest and no work-done progress.
HELIX = t.ClientCapabilities(
    workspace=t.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=t.WorkspaceEditClientCapabilities(document_changes=True),
        configuration=False,
    ),
    text_document=t.TextDocumentClientCapabilities(
        code_action=t.CodeActionClientCapabilities(
            code_action_literal_support=t.ClientCodeActionLiteralOptions(
                code_action_kind=t.ClientCodeActionKindOptions(value_set=["quickfix"])
            )
        ),
        publish_diagnostics=t.PublishDiagnosticsClientCapabilities(),
    ),
)


def capabilities(profile: str) -> t.ClientCapabilities:
    return HELIX if profile == "helix" else client_capabilities(PROFILES[profile])


def _converter() -> Any:
    conv = get_converter()

    # lsprotocol's client-side hook reads any object with a "command" key as a Command, which
    # mangles CodeActions that carry a nested command.
    def hook(obj: dict[str, Any], _: object) -> t.Command | t.CodeAction:
        if isinstance(obj.get("command"), str):
            return conv.structure(obj, t.Command)
        return conv.structure(obj, t.CodeAction)

    conv.register_structure_hook(Union[t.Command, t.CodeAction], hook)  # noqa: UP007
    # pylsp announces notebook sync without the `notebook` field lsprotocol insists on; the
    # client side of these tests has no notebooks, so ignore that capability.
    notebook = t.NotebookDocumentSyncOptions | t.NotebookDocumentSyncRegistrationOptions | None
    conv.register_structure_hook(notebook, lambda _obj, _type: None)
    return conv


class EditorClient(LanguageClient):
    def __init__(self) -> None:
        super().__init__(converter_factory=_converter)
        self.buffers: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.edits_received: list[t.ApplyWorkspaceEditParams] = []
        self.initialize_result: t.InitializeResult | None = None
        self.questions: list[t.ShowMessageRequestParams] = []
        self.answers: list[str | None] = []
        # What the user answers a window/showMessageRequest: by default the next of `answers`;
        # a test may hold the answer (an awaitable) to look at the state while it waits.
        self.answer_question: Callable[
            [t.ShowMessageRequestParams], str | Awaitable[str | None] | None
        ] = lambda _params: self.answers.pop(0) if self.answers else None
        self.edit_answer: Callable[
            [t.ApplyWorkspaceEditParams],
            t.ApplyWorkspaceEditResult | Awaitable[t.ApplyWorkspaceEditResult],
        ] = self.apply
        # What an edit to a file not open does: "open" loads it into a buffer and attaches it
        # (didOpen with the text on disk, then didChange: Neovim, Eglot); "silent" loads it
        # into a buffer the server is not told about.
        self.closed_files = "open"
        self.unreported: set[str] = set()  # buffers loaded silently

    def open(self, path: Path, language: str = "python") -> str:
        uri = path.as_uri()
        text = path.read_text()
        self.buffers[uri], self.versions[uri] = text, 1
        self.text_document_did_open(
            t.DidOpenTextDocumentParams(
                text_document=t.TextDocumentItem(
                    uri=uri, language_id=language, version=1, text=text
                )
            )
        )
        return uri

    def type_at_top(self, uri: str, text: str) -> None:
        """The user inserts `text` at the start of the buffer (sent as a didChange)."""
        start = t.Position(line=0, character=0)
        edit = t.TextEdit(range=t.Range(start=start, end=start), new_text=text)
        self.apply(t.ApplyWorkspaceEditParams(edit=t.WorkspaceEdit(changes={uri: [edit]})))

    def apply(self, params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
        edit = params.edit
        per_uri: list[tuple[str, list[t.TextEdit | t.AnnotatedTextEdit]]] = []
        for change in edit.document_changes or []:
            assert isinstance(change, t.TextDocumentEdit)
            if change.text_document.version not in (
                None,
                self.versions.get(change.text_document.uri),
            ):
                return t.ApplyWorkspaceEditResult(applied=False, failure_reason="version mismatch")
            per_uri.append(
                (
                    change.text_document.uri,
                    [e for e in change.edits if isinstance(e, t.TextEdit | t.AnnotatedTextEdit)],
                )
            )
        for uri, edits in (edit.changes or {}).items():
            per_uri.append((uri, list(edits)))
        for uri, edits in per_uri:
            if uri not in self.buffers:  # an editor loads a file it has not open
                self._load(uri)
            self.buffers[uri] = apply_text_edits(self.buffers[uri], edits)
            if uri in self.unreported:
                continue
            self.versions[uri] += 1
            self.text_document_did_change(
                t.DidChangeTextDocumentParams(
                    text_document=t.VersionedTextDocumentIdentifier(
                        uri=uri, version=self.versions[uri]
                    ),
                    content_changes=[
                        t.TextDocumentContentChangeWholeDocument(text=self.buffers[uri])
                    ],
                )
            )
        return t.ApplyWorkspaceEditResult(applied=True)

    def _load(self, uri: str) -> None:
        path = uri_to_path(uri)
        assert path is not None
        if self.closed_files == "open":
            self.open(path)
        else:
            self.buffers[uri], self.versions[uri] = path.read_text(), 1
            self.unreported.add(uri)

    def save(self, uri: str) -> None:
        """The user saves the buffer (didSave only for a buffer the server knows)."""
        path = uri_to_path(uri)
        assert path is not None
        path.write_text(self.buffers[uri])
        if uri not in self.unreported:
            self.text_document_did_save(
                t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
            )

    def log_text(self) -> str:
        return "\n".join(m.message for m in self.log_messages)

    async def wait_for_log(self, text: str, timeout: float = MESSAGE_WAIT) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while text not in self.log_text():
            if loop.time() > deadline:
                raise AssertionError(f"no log message with {text!r}; got {self.log_text()}")
            await asyncio.sleep(0.05)

    async def wait_for_message(
        self, text: str, timeout: float = MESSAGE_WAIT
    ) -> t.ShowMessageParams:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            for message in self.messages:
                if text in message.message:
                    return message
            await asyncio.sleep(0.05)
        raise AssertionError(f"no message with {text!r}; got {[m.message for m in self.messages]}")


def _make_client() -> EditorClient:
    client = EditorClient()
    register_lsp_features(client)

    @client.feature(t.WORKSPACE_APPLY_EDIT)
    async def apply_edit(
        ls: EditorClient, params: t.ApplyWorkspaceEditParams
    ) -> t.ApplyWorkspaceEditResult:
        ls.edits_received.append(params)
        answer = ls.edit_answer(params)
        return await answer if inspect.isawaitable(answer) else answer

    @client.feature(t.WINDOW_SHOW_MESSAGE_REQUEST)
    async def ask(
        ls: EditorClient, params: t.ShowMessageRequestParams
    ) -> t.MessageActionItem | None:
        ls.questions.append(params)
        answer = ls.answer_question(params)
        if inspect.isawaitable(answer):
            answer = await answer
        return t.MessageActionItem(title=answer) if answer else None

    return client


@asynccontextmanager
async def editor_session(
    profile: str,
    root: Path,
    env: dict[str, str],
    options: dict[str, Any] | None = None,
    command: list[str] | None = None,
) -> AsyncIterator[EditorClient]:
    config = ClientServerConfig(
        server_command=command or [sys.executable, "-m", "agent_lsp", "serve"],
        client_factory=_make_client,
        server_env=env,
    )
    client = await config.start()
    assert isinstance(client, EditorClient)
    client.initialize_result = await client.initialize_session(
        t.InitializeParams(
            capabilities=capabilities(profile),
            client_info=t.ClientInfo(name=profile),
            root_uri=root.as_uri(),
            workspace_folders=[t.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options=options,
        )
    )
    try:
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()
