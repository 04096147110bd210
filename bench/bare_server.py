"""A minimal pygls 2.x language server: the baseline that `lsp_bench.py` compares agent-lsp with.

It registers one handler, textDocument/codeAction, which returns one trivial quick fix per
diagnostic in the request's context, and the command `agentLsp.fix`, answered at once. Text
synchronisation (didOpen/didChange/didClose) is pygls' built-in document store, exactly as in
agent-lsp. Nothing else: no settings, no session.

With `--no-document-store`, didChange changes are dropped (pygls' `TextDocument.apply_change`
does nothing): what is left is the cost of pygls' transport and dispatch per message, i.e. the
most edits per second any document store can reach over pygls' stdio transport.

Run: `python bench/bare_server.py [--no-document-store]` (stdio).
"""

from __future__ import annotations

import sys

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

server = LanguageServer("bare-pygls", "0.1.0")


@server.feature(
    t.TEXT_DOCUMENT_CODE_ACTION,
    t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix]),
)
def code_action(ls: LanguageServer, params: t.CodeActionParams) -> list[t.CodeAction]:
    return [
        t.CodeAction(
            title=f"Fix: {diagnostic.message}",
            kind=t.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
        )
        for diagnostic in params.context.diagnostics
    ]


@server.command("agentLsp.fix")
def fix(ls: LanguageServer, *args: object) -> dict[str, str]:
    """The command ours starts a task with, answered at once (nothing behind it): the floor of
    `lsp_bench.py`'s first-second figures."""
    return {"taskId": "bare"}


def _drop_change(self: TextDocument, change: t.TextDocumentContentChangeEvent) -> None:
    """--no-document-store: the change is not applied."""


if __name__ == "__main__":
    if "--no-document-store" in sys.argv[1:]:
        TextDocument.apply_change = _drop_change  # type: ignore[method-assign]
    server.start_io()
