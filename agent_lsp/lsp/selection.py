"""What the user points at: the cursor or the selected range in `agentLsp.runTask` and
`agentLsp.fix` (an optional `range`), and the code action "Ask agent about the selection…",
offered on a non-empty range (VS Code, Neovim, Emacs and Helix ask for code actions on the
selection). The action's command takes the instruction the client prompts the user for
(`task`); a client without a prompt sends none and the default below runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types as t

if TYPE_CHECKING:  # the server answers before the agent's models are loaded
    from agent_lsp.task import Selection

__all__ = [
    "ASK_SELECTION_COMMAND",
    "DEFAULT_SELECTION_TASK",
    "SELECTION_KIND",
    "SELECTION_TITLE",
    "selection_actions",
    "selection_from",
]

ASK_SELECTION_COMMAND = "agentLsp.askSelection"
SELECTION_TITLE = "Ask agent about the selection…"
SELECTION_KIND = "refactor.agent-lsp.selection"  # listed with the refactorings of a range
DEFAULT_SELECTION_TASK = (
    "Look at the selected code: say briefly what it does, and fix what is wrong in it "
    "(if nothing is, change nothing)."
)


def selection_from(value: Any) -> Selection | None:
    """An LSP range (a JSON object, or lsprotocol's `Range`) as a `Selection`; None for
    anything else."""
    if isinstance(value, t.Range):
        start, end = value.start, value.end
        return _checked(start.line, start.character, end.line, end.character)
    if not isinstance(value, dict):
        return None
    start, end = value.get("start"), value.get("end")
    if not isinstance(start, dict) or not isinstance(end, dict):
        return None
    numbers = [start.get("line"), start.get("character"), end.get("line"), end.get("character")]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return None
    return _checked(*numbers)  # pyright: ignore[reportArgumentType]


def _checked(line: int, character: int, end_line: int, end_character: int) -> Selection | None:
    if min(line, character, end_line, end_character) < 0:
        return None
    from agent_lsp.task import Selection

    if (end_line, end_character) < (line, character):  # selected upwards
        line, character, end_line, end_character = end_line, end_character, line, character
    return Selection(line=line, character=character, end_line=end_line, end_character=end_character)


def selection_actions(
    uri: str, selected: t.Range, diagnosed: Sequence[t.Range] = ()
) -> list[t.CodeAction]:
    """The action on a non-empty range (none on a bare cursor: editors ask on every move, and
    none on a diagnostic's own range: a client asking for that diagnostic's fixes)."""
    if (selected.start.line, selected.start.character) == (
        selected.end.line,
        selected.end.character,
    ) or any(selected == r for r in diagnosed):
        return []
    rng = {
        "start": {"line": selected.start.line, "character": selected.start.character},
        "end": {"line": selected.end.line, "character": selected.end.character},
    }
    return [
        t.CodeAction(
            title=SELECTION_TITLE,
            kind=SELECTION_KIND,
            command=t.Command(
                title=SELECTION_TITLE,
                command=ASK_SELECTION_COMMAND,
                arguments=[{"uri": uri, "range": rng}],
            ),
        )
    ]
