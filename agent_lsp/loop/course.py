"""The small-model profile's course corrections (`loop/small.py` has its first look): a
first reply that tried nothing asked again, an edit that broke passing tests or that the model
keeps writing back undone and the first request asked again (or made again from an edit that
was progress), each warmer; and what a small model is shown again after a reply that did not
finish. The agent loop (`loop/agent.py`) takes these as a part of itself."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from adapters.affected import is_test_file
from agent_lsp.errors import AgentLspError
from agent_lsp.loop.checks import DoneChecks
from agent_lsp.loop.small import (
    FirstLook,
    broken_by_edit,
    first_look,
    fixed_none,
    how_to_answer,
    progress_by_edit,
)
from agent_lsp.messages import (
    CHARS_PER_TOKEN,
    ChatMessage,
    EventKind,
    ToolCall,
    ToolResult,
    ToolStatus,
)
from agent_lsp.task import Task, TaskKind

# edit_file's refusals that the same call again confirms (`tools/files.py`): they guard the
# model's edits, and an undo writes back the file as it was (held-out bench: a roman numeral
# edit that grew the file by 22 lines could not be undone, and the run stuck on it)
CONFIRMED_BY_REPEAT = ("large deletion", "undefined name")
RETRY_WARMTH = 0.5  # temperature added per reply in a row that did nothing (small profile)


def named_tests(ids: Sequence[str]) -> str:
    """Test ids for a message: the test's own name, the first three and how many more."""
    names = [i.replace("::", ".").rsplit(".", 1)[-1] or i for i in ids]
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


class SmallCourse(DoneChecks):
    """A small model's course corrections, as a part of its task's agent (`Agent` is one)."""

    _idle: int  # replies in a row in words only while the task is not done
    _unusable: int  # replies in a row whose tool call or edit could not be used

    if TYPE_CHECKING:  # the agent's own

        async def _run_one(self, call: ToolCall, step: int) -> ToolResult: ...

        async def _checkpoint(self, step: int) -> None: ...

    def _init_course(self) -> None:
        self._shown: list[str] = []  # the code files its first look showed
        self._echoed = False  # a small model wrote a file back unchanged: answer in blocks now
        self._first: list[ChatMessage] = []  # a small model's first request (to start over)
        self._originals: dict[str, str] = {}  # files as they were before its first edit of them
        self._look: FirstLook | None = None  # a small model's first look (its tests' verdict)
        self._start_overs = 0  # times a small model's first request was asked again
        self._fresh = False  # the next request is a start over's: sampled warmer
        self._task: Task | None = None  # the task (a start over from a better state looks again)
        self._asked: ChatMessage | None = None  # its message, before the first look's parts

    async def _first_look(self, task: Task) -> FirstLook | None:
        """The small-model profile's first look: the tests run once and the files that
        matter shown whole (loop/small.py); None when it showed no file."""
        if task.kind is not TaskKind.FIX and task.kind is not TaskKind.TASK:
            return None
        await self._emit(EventKind.TOOL_CALL, "a first look: the tests and the files")
        budget = int(self.limits.context_window * CHARS_PER_TOKEN * 0.3)
        look = await first_look(task, self.workspace, self.verifier, min(budget, 24_000))
        await self._emit(EventKind.TOOL_RESULT, f"first look: {', '.join(look.shown) or 'no file'}")
        if look.report is not None:  # a test run of the task like any other (log, memory)
            await self.hooks.tests_checked(
                0, look.report.ok, f"first look: {look.report.summary(with_hint=False)}"
            )
        self._shown = [rel for rel in look.shown if not is_test_file(rel)]
        return look if look.shown else None

    async def _ask_again(self, step: int, why: str = "the reply changed nothing") -> None:
        """A small model wrote its files back unchanged: the same request is asked again,
        warmer (`_retry_temperature`), without that reply in the history. Kept and answered,
        the echo was copied again at every temperature (held-out bench: four tasks, each retry
        an echo), while the same request asked afresh at 0.7 fixed two of them in a prompt lab.
        So is its first request, when its first reply changed nothing (`_at_first`)."""
        if self.messages and self.messages[-1].role == "assistant":
            self.messages.pop()
        await self._emit(EventKind.MESSAGE, f"{why}: asking again, warmer", step)
        await self._checkpoint(step)

    def _at_first(self) -> bool:
        """Only the first request and its reply so far (a small model's): nothing applied
        yet, so that request, the one it answers best, can be asked again as it is. Kept and
        corrected, a first reply that wrote the test instead of the code, or only "Ok.", was
        followed by "Ok." to the end (held-out bench, through the editor: three in a row). Not
        for an edit that was tried and refused (a rule, a SEARCH text not in the file): the
        model is told why, as before."""
        first = self._first
        return bool(first) and len(self.messages) == len(first) + 1 and self.messages[:-1] == first

    async def _start_over(self, step: int, why: str) -> bool:
        """A small model that echoes its own wrong edit back is stuck on it (held-out bench:
        every later request, at any temperature, brought the same wrong file back), and one
        whose edit broke tests that passed and fixed none builds on a step back: its edits
        are undone (each file written back as it was, an edit the user can undo in turn) and
        its first request asked again, warmer — a fresh first answer, not one leaning on the
        wrong one. False: nothing of its own to undo (asked again as it is)."""
        changed = self._changed()
        if not self._first or not changed:
            return False
        if not all(self._wrote_last(rel, current) for rel, (current, _) in changed.items()):
            return False  # changed since the agent's edit (the user typed): theirs stays
        fixed = progress_by_edit(self._look.report if self._look else None, self._judged)
        if fixed:
            return await self._start_here(step, why, fixed, {r: c for r, (c, _) in changed.items()})
        await self._emit(
            EventKind.MESSAGE,
            f"{why}: undoing it ({', '.join(changed)}) and asking the first request again, warmer",
            step,
        )
        for n, (rel, (current, text)) in enumerate(changed.items()):
            arguments = json.dumps({"path": rel, "old_text": current, "new_text": text})
            call = ToolCall(id=f"start_over_{step}_{n}", name="edit_file", arguments=arguments)
            result = await self._run_one(call, step)
            if result.metadata.get("reason") in CONFIRMED_BY_REPEAT:  # a guard of the model's
                result = await self._run_one(call, step)  # edits: the same call confirms it
            if result.status is not ToolStatus.SUCCESS:
                return False  # not undone (refused, or the file changed meanwhile): go on as is
        self.workspace.changed_files = [
            rel for rel in self.workspace.changed_files if rel not in changed
        ]
        self.messages = list(self._first)
        self._start_overs += 1
        self._fresh = True
        await self._checkpoint(step)
        return True

    async def _start_here(self, step: int, why: str, fixed: list[str], now: dict[str, str]) -> bool:
        """The wrong edit a small model is stuck on was progress (it made failing tests pass
        and broke none): not undone — the first request is made again from here, the files
        and the failures as they are now (held-out bench: a chunk fix that passed one more
        test, undone after its echo, was never found again), and asked warmer."""
        task, asked, first = self._task, self._asked, self._first
        if task is None or asked is None or not first:
            return False
        look = await self._first_look(task)
        if look is None:
            return False
        await self._emit(
            EventKind.MESSAGE,
            f"{why}; it made {named_tests(fixed)} pass: asking the first request again from its "
            "edit, warmer",
            step,
        )
        self._look = look
        self._originals.update(now)  # an undo now comes back here
        self.messages = look.conversation(first[0], asked)
        self._first = list(self.messages)
        self._start_overs += 1
        self._fresh = True
        await self._checkpoint(step)
        return True

    def _step_back(self) -> str:
        """Why a small model's last edit (in words) is undone and its first request asked
        again, warmer (`_start_over`): it broke tests that passed and fixed none, or it fixed
        none of the failing tests; "" when it stays and the model is shown its failures.
        Shown them, the model wrote the same wrong edit back in 15 of 20 such requests and
        solved none (held-out bench, 16 runs: 39% of the tokens); a fresh first answer
        solved. An edit of some of the code files the first look showed, when it showed more
        than one, stays: half of a fix across files fixes no test alone."""
        if broke := self._broke():
            return f"the edit broke {named_tests(broke)}, which passed before"
        look = self._look
        still = fixed_none(look.report if look else None, self._judged)
        if not still:
            return ""
        changed = self._changed()
        if len(self._shown) > 1 and any(rel not in changed for rel in self._shown):
            return ""
        fails = "fails" if len(still) == 1 else "fail"
        return f"the edit fixed none of the failing tests ({named_tests(still)} still {fails})"

    def _changed(self) -> dict[str, tuple[str, str]]:
        """The files the model's edits changed: each one's text now and before its first edit."""
        return {
            rel: (current, text)
            for rel, text in self._originals.items()
            if (current := self._current(rel)) is not None and current != text
        }

    def _broke(self) -> list[str]:
        """The tests the last edit broke that passed at the first look, when it fixed none
        (`small.broken_by_edit`); [] without a first look's verdict."""
        look, judged = self._look, self._judged
        if look is None or judged is None:
            return []
        return broken_by_edit(self.workspace.root, look.report, look.ran, judged)

    def _wrote_last(self, rel: str, text: str) -> bool:
        try:
            return self.workspace.wrote_last(self.workspace.describe(rel).path, text)
        except (AgentLspError, ValueError):
            return False

    def _current(self, rel: str) -> str | None:
        """`rel`'s text as the agent sees it now (the editor's buffer first); None: no file,
        or one hidden from the agent."""
        ws = self.workspace
        try:
            path = ws.describe(rel, "read_file").path
            if ws.hidden(path, "read_file") or not path.is_file():
                return None
            return ws.read_text(path)
        except (AgentLspError, OSError, ValueError):
            return None

    def _retry_temperature(self) -> float | None:
        """A small model's replies in a row that did nothing: its next one is sampled warmer
        (0.5 a reply, up to 1.0), since at temperature 0 it would say the same again."""
        stuck = self._idle + self._unusable
        if self._fresh:  # a first request asked again: not the answer it gave before
            stuck = max(stuck, self._start_overs)
        return min(RETRY_WARMTH * stuck, 1.0) if self.small and stuck else None

    def _small_reminder(self, budget: int = 8_000) -> str:
        """For a small model whose reply did not finish the task: the code files it was shown
        or changed, as they are now, and how to answer (it forgets both within a few turns)."""
        files = [
            rel
            for rel in dict.fromkeys([*self._shown, *self.workspace.changed_files])
            if not is_test_file(rel)
        ]
        parts: list[str] = []
        code: dict[str, str] = {}
        for rel in files:
            shown = self._as_it_is(rel)
            if shown and len(shown) <= budget:
                budget -= len(shown)
                parts.append(shown)
                code[rel] = shown
        if not files:
            return "".join(parts)
        return "".join(parts) + "\n\n" + how_to_answer(code, blocks=self._echoed)

    def _as_it_is(self, rel: str, limit: int = 6_000) -> str:
        """A file's current text for the model after an edit of it failed (a small one), as
        the first look shows files; "" when it is too big or not readable."""
        ws = self.workspace
        try:
            path = ws.describe(rel, "read_file").path
            if ws.hidden(path, "read_file") or path.stat().st_size > limit:
                return ""
            text = ws.read_text(path)
        except (AgentLspError, OSError, ValueError):
            return ""
        ws.note_read(path, text, looked=rel not in ws.changed_files)  # its own edit: no look
        return f"\n{rel} as it is now:\n```\n{text.rstrip()}\n```"
