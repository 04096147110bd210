"""A minimal pygls 2.x language server: the baseline that `lsp_bench.py` compares agent-lsp with.

It registers one handler, textDocument/codeAction, which returns one trivial quick fix per
diagnostic in the request's context. Text synchronisation (didOpen/didChange/didClose) is pygls'
built-in document store, exactly as in agent-lsp. Nothing else: no settings, no session.

Run: `python bench/bare_server.py` (stdio).
"""

from __future__ import annotations

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer

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


if __name__ == "__main__":
    server.start_io()
