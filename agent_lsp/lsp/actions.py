"""Code actions: cheap, deterministic, never a model call (editors ask on every cursor move)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as t

FIX_PREFIX = "Ask agent to fix: "
FIX_COMMAND = "agentLsp.fix"
CANCEL_COMMAND = "agentLsp.cancel"
MAX_TITLE = 100


def fix_title(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "problem"
    if len(first) > MAX_TITLE:
        first = first[: MAX_TITLE - 1] + "…"
    return FIX_PREFIX + first


def code_actions(
    uri: str, diagnostics: Sequence[t.Diagnostic], running_task: str | None
) -> list[t.CodeAction]:
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
