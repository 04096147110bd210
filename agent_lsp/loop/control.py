"""`TaskControl`: the user in the loop of one running task — steer notes taken into the
conversation at the next step, questions the agent asks (`ask_user`) and the pause when the
rebuilt context finds a conflict. Steer notes may come from any thread (the language server's
loop; the task runs on the agent thread's). A note never answers a question: a question is
answered through its own prompt only (a note sent while it waits goes to the next model
request, as any note)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_lsp.memory.conflicts import ConflictCheck
from agent_lsp.seams import EditorChannel

GO_ON, STOP = "Go on", "Stop"
CONFIRMED = "Asked before going on, the user said go on despite: "
SKIP = "Skip"  # offered with every question: the user chooses not to answer
# an empty answer after this share of the timeout is the channel's own wait running out
TIMED_OUT = 0.95


@dataclass(frozen=True)
class Answer:
    """The user's answer (`text`), or None and why there is none."""

    text: str | None
    why: str = ""


class TaskControl:
    def __init__(
        self,
        channel: EditorChannel,
        timeout: float,
        conflicts: ConflictCheck | None = None,
        title: str = "",
        on_change: Callable[[], None] | None = None,
    ) -> None:
        """`timeout`: seconds a question waits for an answer (askTimeout); `on_change` saves
        what the user let pass (the checkpoint)."""
        self.channel = channel
        self.timeout = timeout
        self.conflicts = conflicts
        self.title = title
        self.on_change = on_change
        self._notes: deque[str] = deque()
        self._confirmed = ""  # the conflicts the user said go on with, for the model

    # -- steer -------------------------------------------------------------------------------

    def steer(self, note: str) -> bool:
        """A note from the user for the running task (any thread); False if it is empty."""
        note = " ".join(note.split())
        if not note:
            return False
        self._notes.append(note)
        return True

    def notes(self) -> list[str]:
        """The notes sent since the last call, oldest first."""
        taken: list[str] = []
        while self._notes:
            taken.append(self._notes.popleft())
        return taken

    # -- questions ---------------------------------------------------------------------------

    async def ask(self, question: str, options: Sequence[str], skip: bool = True) -> Answer:
        """Ask through the channel (no options: a free-text question), answered through the
        channel's own prompt only (never by a steer note). No answer within `timeout` is
        none."""
        extra = skip and options and SKIP not in options
        choices = [*options, SKIP] if extra else list(options)
        started = asyncio.get_running_loop().time()
        asked = asyncio.ensure_future(self.channel.ask(question, choices))
        try:
            done, _ = await asyncio.wait({asked}, timeout=self.timeout)
        finally:
            asked.cancel()
            with contextlib.suppress(BaseException):
                await asked
        if asked in done and not asked.cancelled() and asked.exception() is None:
            text = asked.result()
            if text == SKIP and extra:
                return Answer(None, "the user chose not to answer")
            waited = asyncio.get_running_loop().time() - started
            if text is None and waited >= self.timeout * TIMED_OUT:
                pass  # the channel's own wait (askTimeout too) ran out first: a timeout
            elif text is None or not text.strip():
                return Answer(None, "the user gave no answer (dismissed, or no one to answer)")
            else:
                return Answer(text.strip())
        return Answer(None, f"no answer within {self.timeout:.0f} s")

    # -- conflicts at a rebuild --------------------------------------------------------------

    def confirmed(self) -> str:
        """What to tell the model after the user said go on with a conflict ("" if nothing)."""
        said, self._confirmed = self._confirmed, ""
        return said

    async def confirm(self) -> str | None:
        """After the context was rebuilt: None to go on; else why the task pauses (the user
        said stop, or gave no answer, to a conflict)."""
        if self.conflicts is None:
            return None
        found = await asyncio.to_thread(self.conflicts.find)
        if not found:
            return None
        what = "; ".join(found)
        task = f" “{self.title}”" if self.title else ""
        question = (
            f"agent-lsp: before going on with the task{task}: {what}. Go on, or stop (the task "
            "pauses; continue it later with a hint)?"
        )
        answer = await self.ask(question, [GO_ON, STOP], skip=False)
        if answer.text is not None and answer.text.casefold() == GO_ON.casefold():
            self._confirmed = f"{CONFIRMED}{what}"
            await asyncio.to_thread(self.conflicts.accept, found)
            if self.on_change is not None:
                await asyncio.to_thread(self.on_change)
            return None
        said = "the user said stop" if answer.text is not None else answer.why
        return f"{what} ({said})"
