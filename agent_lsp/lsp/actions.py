"""Code actions: cheap, deterministic, never a model call (editors ask on every cursor move)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as t

FIX_PREFIX = "Ask agent to fix: "
EXPLAIN_PREFIX = "Ask agent to explain: "
FIX_COMMAND = "agentLsp.fix"
EXPLAIN_COMMAND = "agentLsp.explain"
CANCEL_COMMAND = "agentLsp.cancel"
MAX_TITLE = 100
EXPLAIN_KIND = "quickfix.agent-lsp.explain"  # a quickfix sub-kind: listed where fixes are


def fix_title(message: str, prefix: str = FIX_PREFIX) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "problem"
    if len(first) > MAX_TITLE:
        first = first[: MAX_TITLE - 1] + "…"
    return prefix + first


def code_actions(
    uri: str,
    diagnostics: Sequence[t.Diagnostic],
    running_task: str | None,
    more: Sequence[t.CodeAction] = (),
) -> list[t.CodeAction]:
    """Fix and explain each diagnostic, then `more` (the selection's action), then cancel the
    running task."""
    actions: list[t.CodeAction] = []
    for diagnostic in diagnostics:
        title = fix_title(diagnostic.message)
        actions.append(
            t.CodeAction(
                title=title,
                kind=t.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                command=t.Command(title=title, command=FIX_COMMAND, arguments=[uri, diagnostic]),
            )
        )
    for diagnostic in diagnostics:  # answers in a message, edits nothing
        title = fix_title(diagnostic.message, EXPLAIN_PREFIX)
        actions.append(
            t.CodeAction(
                title=title,
                kind=EXPLAIN_KIND,
                diagnostics=[diagnostic],
                command=t.Command(
                    title=title, command=EXPLAIN_COMMAND, arguments=[uri, diagnostic]
                ),
            )
        )
    actions += more
    if running_task is not None:
        actions.append(
            t.CodeAction(
                title="Cancel agent task",
                kind=t.CodeActionKind.QuickFix,
                command=t.Command(
                    title="Cancel agent task",
                    command=CANCEL_COMMAND,
                    arguments=[{"taskId": running_task}],
                ),
            )
        )
    return actions
