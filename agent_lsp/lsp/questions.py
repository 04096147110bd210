"""Asking the user where the editor has no `window/showMessageRequest` (e.g. Helix): the question
becomes a diagnostic "agent asks to …" whose code actions are the answers. A question answered
in words (no options) waits for `agentLsp.answer` {questionId, choice: the words}. No answer
within the timeout means no."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from lsprotocol import types as t

from agent_lsp.lsp.publisher import SOURCE, AgentDiagnostics

ANSWER = "agentLsp.answer"


class Questions:
    def __init__(self, publisher: AgentDiagnostics, timeout: float = 120.0) -> None:
        self.publisher = publisher
        self.timeout = timeout
        self.pending: dict[str, tuple[str, asyncio.Future[str]]] = {}

    async def ask(
        self,
        uri: str,
        line: int,
        question: str,
        options: Sequence[str],
        wait: float | None = None,
    ) -> str | None:
        """`wait`: seconds to wait for the answer (default: the store's timeout)."""
        question_id = uuid.uuid4().hex[:8]
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.pending[question_id] = (uri, future)
        diagnostic = t.Diagnostic(
            range=t.Range(
                start=t.Position(line=line, character=0), end=t.Position(line=line, character=0)
            ),
            message=f"{question} — answer with a code action on this line",
            severity=t.DiagnosticSeverity.Warning,
            source=SOURCE,
            data={"questionId": question_id, "options": list(options)},
        )
        self.publisher.set("questions", uri, [diagnostic])
        try:
            return await asyncio.wait_for(asyncio.shield(future), wait or self.timeout)
        except TimeoutError:
            return None
        finally:
            self.pending.pop(question_id, None)
            self.publisher.set("questions", uri, [])

    async def ask_in_words(self, show: Callable[[str], None], wait: float) -> str | None:
        """A question answered in words: `show(question_id)` tells the user how (the command
        `agentLsp.answer` with that id); None after `wait` seconds or for empty words."""
        question_id = uuid.uuid4().hex[:8]
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.pending[question_id] = ("", future)
        show(question_id)
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), wait)
        except TimeoutError:
            return None
        finally:
            self.pending.pop(question_id, None)
        return answer.strip() or None

    def answer(self, question_id: str, choice: str) -> bool:
        entry = self.pending.get(question_id)
        if entry is None or entry[1].done():
            return False
        entry[1].set_result(choice)
        return True


def answer_actions(diagnostic: t.Diagnostic) -> list[t.CodeAction]:
    data: Any = diagnostic.data
    if not isinstance(data, dict) or not isinstance(data.get("questionId"), str):
        return []
    return [
        t.CodeAction(
            title=f"Agent: {option}",
            kind=t.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            command=t.Command(
                title=option,
                command=ANSWER,
                arguments=[{"questionId": data["questionId"], "choice": option}],
            ),
        )
        for option in data.get("options", [])
        if isinstance(option, str)
    ]
