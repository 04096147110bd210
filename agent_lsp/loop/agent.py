"""The agent loop: prompt + tools + loop, until the tests pass or a limit is reached."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import replace

from agent_lsp.errors import ModelError
from agent_lsp.loop.checks import WORDS_ONCE
from agent_lsp.loop.compaction import (
    KEEP_TURNS,
    MIN_SUMMARISED_TURNS,
    compact,
    older_turns,
    summarise,
    with_summary,
)
from agent_lsp.loop.course import SmallCourse
from agent_lsp.loop.guard import LoopGuard
from agent_lsp.loop.hooks import Limits, NoHooks, TaskHooks, UserTurns
from agent_lsp.loop.keep import keep_left_out, may_drop
from agent_lsp.loop.prompt import TASK_FILE, build_messages, with_context
from agent_lsp.loop.small import (
    SMALL_SYSTEM_PROMPT,
)
from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.loop.verify import Verifier
from agent_lsp.loop.words import Found, attempted, correction, edits_in_words, prose
from agent_lsp.messages import (
    CHARS_PER_TOKEN,
    ChatMessage,
    EventKind,
    ModelReply,
    ResumePoint,
    TaskOutcome,
    TaskStatus,
    ToolCall,
    ToolResult,
    ToolStatus,
    Usage,
    estimate_tokens,
)
from agent_lsp.project.workspace import Workspace
from agent_lsp.seams import MIN_TEMPERATURE, EditorChannel, Model
from agent_lsp.task import Task

STEER_PREFIX = "A note from the user, sent while you work: "
WORDS = 300  # how much of the model's own words an outcome quotes

logger = logging.getLogger(__name__)


def _quote(text: str | None) -> str:
    words = " ".join((text or "").split())
    if not words:
        return "(an empty reply)"
    return words if len(words) <= WORDS else words[: WORDS - 1] + "…"


def _reply_tokens(reply: ModelReply) -> int:
    out = (reply.content or "") + "".join(c.name + c.arguments for c in reply.tool_calls)
    return max(1, len(out) // CHARS_PER_TOKEN)


FAILED_WORDS = "The edits written in your reply could not be applied"
APPLIED_WORDS = "Applied the edits written in your reply"


def _words_left(left: int) -> str:
    if left <= 1:
        return WORDS_ONCE
    return f"After {left} more answers in words only, the task stops here."


class Agent(SmallCourse):
    """One task. Stops when: done (tests pass), the model stopped (it answered in words twice
    in a row while the tests fail: one nudge with the failures, then its words are the
    outcome), max steps, token budget, a loop (paused), a model error, or cancellation — each
    reported as the outcome's stop reason. Done without a test run to prove it is
    `verified=False`: the model's word only."""

    def __init__(
        self,
        model: Model,
        toolbox: ToolBox,
        workspace: Workspace,
        channel: EditorChannel,
        verifier: Verifier | None,
        profile: str,
        limits: Limits,
        repo_map: str = "",
        hooks: TaskHooks | None = None,
        control: UserTurns | None = None,
    ) -> None:
        self.control = control
        self.repo_map = repo_map
        self.hooks: TaskHooks = hooks or NoHooks()
        self.model = model
        self.toolbox = toolbox
        self.workspace = workspace
        self.channel = channel
        self.verifier = verifier
        self.profile = profile
        self.system_template: str | None = None  # its own system prompt (a team role's)
        self.limits = limits
        self.guard = LoopGuard()
        self.usage = Usage()
        self.messages: list[ChatMessage] = []
        self._unread_calls = 0  # tool calls since the task state was last read
        self._summary_failed = -KEEP_TURNS  # the step of the last failed summary call
        self._init_checks()  # loop/checks.py: the tests, the diagnostic, the review
        self._edited: list[str] = []  # the files this step's tool calls changed
        self.small = False  # the small-model profile (loop/small.py)
        self._init_course()  # loop/course.py: its first look, start overs
        self._idle = 0  # replies in a row in words only while the task is not done
        self._unusable = 0  # replies in a row whose tool call or edit could not be used
        self._attempts = 0  # replies that tried a fix and left the task not done (in all)
        self._echo = False  # the last reply's edits were all files written back unchanged

    async def run(self, task: Task, resume: ResumePoint | None = None) -> TaskOutcome:
        step = 0
        if resume is None:
            await self._emit(EventKind.STARTED, f"started: {task.title()}")
            context = await self.hooks.context("start")
            if self.small and self.system_template is None:
                self.system_template = SMALL_SYSTEM_PROMPT
            look = self._look = await self._first_look(task) if self.small else None
            repo_map = "" if look else self.repo_map  # the files shown say more
            self.messages = build_messages(
                task,
                self.workspace,
                self.profile,
                repo_map,
                context,
                self.system_template,
                excerpt=not (look and task.path in look.shown),  # shown whole, unnumbered
            )
            if look:
                self._task, self._asked = task, self.messages[-1]
                self.messages = look.conversation(*self.messages)
                self._first = list(self.messages)
        else:
            step = resume.step
            how = "resumed" if resume.hint is None else "continued"
            await self._emit(EventKind.STARTED, f"{how} at step {step}: {task.title()}")
            self.usage = resume.usage
            self.workspace.changed_files = list(resume.changed_files)
            context = await self.hooks.context("resume" if resume.hint is None else "continue")
            self.messages = with_context(
                list(resume.messages),
                self.workspace.root,
                self.profile,
                context,
                self.system_template,
            )
            await self._add_hint(resume.hint, step)
        await self._checkpoint(step)
        try:
            if resume is not None and (paused := await self._user_turn(step, True)):
                return paused
            while (limit := self._limit_reached(step)) is None:
                step += 1
                system = self.messages[0] if self.messages else None
                await self._compact_if_needed(step)
                rebuilt = bool(self.messages) and self.messages[0] is not system
                if paused := await self._user_turn(step, rebuilt):
                    return paused
                if (over := self._request_over_budget()) is not None:
                    return self._outcome(TaskStatus.FAILED, over, step, "token budget")
                warmer = MIN_TEMPERATURE.set(self._retry_temperature())
                try:
                    reply = await self._ask_model(step)
                finally:
                    MIN_TEMPERATURE.reset(warmer)
                    self._fresh = False
                if reply.tool_calls:
                    self._idle = self._unusable = 0
                    before = self._attempts
                    await self._run_tools(reply.tool_calls, step)
                    self._remind_of_state(reply.tool_calls)
                    await self._checkpoint(step)
                    if loop := self.guard.looping():
                        return self._outcome(TaskStatus.PAUSED, f"paused: {loop}", step, "loop")
                    if over := self._attempts_over(step, tried=before < self._attempts):
                        return over
                    continue
                found = self._words_edits(reply, task)
                applied = await self._apply_words(found, step) if found.edits else ""
                if applied and not applied.startswith(FAILED_WORDS):
                    self._idle = self._unusable = 0
                cut = (
                    " (its reply was cut at the output cap, [model] maxTokens)" if reply.cut else ""
                )
                if applied.startswith(FAILED_WORDS):  # its edits all failed: nothing to judge
                    done, feedback, unverified = False, "", ""
                else:
                    done, feedback, unverified = await self._check_done(step, task)
                if self._failed_check is not None:
                    summary = f"{self._failed_check}; the model says{cut}: {_quote(reply.content)}"
                    await self._emit(EventKind.MESSAGE, summary, step)
                    return self._outcome(TaskStatus.FAILED, summary, step, "diagnostic remains")
                if done and unverified:
                    summary = (
                        f"unverified: {unverified}; the model says{cut}: {_quote(reply.content)}"
                    )
                    return self._outcome(
                        TaskStatus.COMPLETED, summary, step, "unverified", verified=False
                    )
                if done:
                    words = (prose(reply.content or "") if applied else reply.content) or (
                        f"edited {', '.join(self.workspace.changed_files)}" if applied else "done"
                    )
                    return self._outcome(TaskStatus.COMPLETED, words + cut, step, "done")
                said = self._not_used(reply, found, applied, feedback, step, cut)
                if isinstance(said, TaskOutcome):
                    await self._emit(EventKind.MESSAGE, said.summary, step)
                    return said
                echo = found.edits and self._echo and not applied.startswith(APPLIED_WORDS)
                if self.small and echo:
                    if not await self._start_over(step, "the model wrote its own wrong edit back"):
                        await self._ask_again(step)
                    continue
                back = self.small and applied.startswith(APPLIED_WORDS) and self._step_back()
                if back and await self._start_over(step, back):
                    continue
                feedback = said
                switch = getattr(self.model, "answered_in_words", None)
                if callable(switch) and not applied:  # toolCalling = auto: no native calls
                    switch()
                if self.small and not found.edits and self._at_first():  # no edit was tried
                    await self._ask_again(step, "the first reply changed nothing")
                    continue
                if reply.cut:
                    feedback = (
                        "Your reply was cut at the output cap: be brief, and act through the "
                        f"tools.\n{feedback}"
                    )
                if applied:
                    feedback = f"{applied}\n{feedback}"
                if self.small:
                    feedback += self._small_reminder()
                self.messages.append(ChatMessage(role="user", content=feedback))
                await self._checkpoint(step)
        except ModelError as exc:
            return self._outcome(TaskStatus.ERROR, f"model error: {exc}", step, "model error")
        except asyncio.CancelledError:
            await self._emit(EventKind.FINISHED, "cancelled", step)
            raise
        return self._outcome(TaskStatus.FAILED, limit, step, limit.split(" (")[0])

    def _not_used(
        self, reply: ModelReply, found: Found, applied: str, feedback: str, step: int, cut: str
    ) -> TaskOutcome | str:
        """A reply that did not finish the task and made no tool call: the outcome when the
        limit of such replies is reached, else what the model is told. A reply that tried a
        call or an edit that could not be used gets the exact syntax (`format_errors` of those
        in a row stop the task); one in words only, the failures (`words_in_row`)."""
        problems = [*([reply.format_error] if reply.format_error else []), *found.problems]
        unusable = applied.startswith(FAILED_WORDS) or bool(problems) or attempted(reply.content)
        # a try at a fix, and the task is not done — not a reply that wrote its files back
        # unchanged: it tried nothing (limited as a reply that did nothing, `format_errors`
        # in a row); counted, it took the try that would have followed its start over
        echo = bool(found.edits) and self._echo
        tried = (unusable or bool(applied)) and not echo
        self._attempts += tried
        left = self.limits.format_errors - (self._unusable + 1)
        if unusable:
            self._unusable += 1
            if left <= 0:
                summary = (
                    f"stopped: {self._unusable} replies in a row without a usable tool call "
                    f"or edit{cut}: {_quote(reply.content)}"
                )
                return self._outcome(TaskStatus.FAILED, summary, step, "malformed calls")
        if over := self._attempts_over(step, tried, f"{cut}: {_quote(reply.content)}"):
            return over
        if unusable:
            failures = feedback.replace(WORDS_ONCE, "").strip()
            told = correction(problems, left, syntax=not self.small)
            return f"{failures}\n\n{told}" if failures else told
        if applied:
            return feedback
        self._idle += 1
        left = self.limits.words_in_row - self._idle
        if left <= 0:
            summary = f"stopped: the model did not continue{cut}: {_quote(reply.content)}"
            return self._outcome(TaskStatus.FAILED, summary, step, "model stopped")
        return feedback.replace(WORDS_ONCE, _words_left(left))

    def _attempts_over(self, step: int, tried: bool, said: str = "") -> TaskOutcome | None:
        """The task's outcome once a reply that tried a fix reached `attempts` such replies
        (each left the tests failing); None before, or without a limit."""
        if not tried or not 0 < self.limits.attempts <= self._attempts:
            return None
        summary = f"stopped: {self._attempts} tries at a fix (maxAttempts), not done{said}"
        return self._outcome(TaskStatus.FAILED, summary, step, "attempts")

    # -- the user in the loop: continue with a hint, steer notes, a conflict at a rebuild ---

    async def _add_hint(self, hint: str | None, step: int) -> None:
        if hint is None:
            return
        self.messages.append(ChatMessage(role="user", content=hint))
        await self._emit(EventKind.MESSAGE, f"continue: {hint}", step)

    async def _user_turn(self, step: int, rebuilt: bool) -> TaskOutcome | None:
        """Before the model's turn: after a context rebuild, a conflict pauses the task unless
        the user says go on; then the notes the user sent meanwhile join the conversation."""
        if self.control is None:
            return None
        if rebuilt and (why := await self.control.confirm()) is not None:
            summary = f"a conflict found when the context was rebuilt: {why}"
            await self._emit(EventKind.MESSAGE, f"paused: {summary}", step)
            return self._outcome(TaskStatus.PAUSED, summary, step, "conflict")
        if rebuilt and (said := self.control.confirmed()):  # the user's answer, for the model
            self.messages.append(ChatMessage(role="user", content=said))
        for note in self.control.notes():
            self.messages.append(ChatMessage(role="user", content=f"{STEER_PREFIX}{note}"))
            await self._emit(EventKind.MESSAGE, f"steer: {note}", step)
        return None

    def _limit_reached(self, step: int) -> str | None:
        if step >= self.limits.max_steps:
            return f"max steps ({self.limits.max_steps}) reached without passing tests"
        used = self.usage.prompt_tokens + self.usage.completion_tokens
        if used >= self.limits.max_tokens:
            return f"token budget ({used} of {self.limits.max_tokens} tokens) used up"
        return None

    def _request_over_budget(self) -> str | None:
        """The next request would take the task past its token budget by its own size (its
        prompt, as estimated): stopped before it is sent, not after (a team role's share). The
        first request of a run always goes: without it the run could not begin."""
        used = self.usage.prompt_tokens + self.usage.completion_tokens
        if not used:
            return None
        asked = estimate_tokens(self.messages)
        if used + asked <= self.limits.max_tokens:
            return None
        return (
            f"token budget ({used} of {self.limits.max_tokens} tokens used; the next request, "
            f"~{asked} tokens, would pass it)"
        )

    async def _compact_if_needed(self, step: int) -> None:
        threshold = int(self.limits.context_window * self.limits.compact_at)
        if estimate_tokens(self.messages) <= threshold:
            return
        self.messages, masked = compact(self.messages)
        summarised = 0
        if (
            self.limits.summarise
            and estimate_tokens(self.messages) > threshold
            and older_turns(self.messages) >= MIN_SUMMARISED_TURNS
            and step - self._summary_failed >= KEEP_TURNS
        ):
            summarised = await self._summarise(step)
        if not masked and not summarised:
            return
        await self.hooks.compacted(step, masked, summarised)
        context = await self.hooks.context("compaction")
        if context:
            root, template = self.workspace.root, self.system_template
            self.messages = with_context(self.messages, root, self.profile, context, template)
        rebuilt = "; starting context rebuilt" if context else ""
        what = f"{masked} old outputs masked"
        if summarised:
            what += f", {summarised} older turns summarised"
        await self._emit(EventKind.MESSAGE, f"context compacted: {what}{rebuilt}", step)

    async def _summarise(self, step: int) -> int:
        """One model call summarises the turns before the last ones; the number of turns
        summarised, 0 when the call failed (the masked history stays: nothing is lost)."""
        turns = older_turns(self.messages)
        try:
            reply = await summarise(self.model, self.messages)
            if not (reply.content or "").strip():
                raise ModelError("the summary came back empty")
        except ModelError as exc:
            self._summary_failed = step  # not asked again for the next KEEP_TURNS steps
            await self._emit(
                EventKind.MESSAGE, f"context summary failed ({exc}); old outputs masked only", step
            )
            return 0
        usage = reply.usage
        if not usage.prompt_tokens or not usage.completion_tokens:
            usage = usage.model_copy(
                update={
                    "prompt_tokens": usage.prompt_tokens or estimate_tokens(self.messages),
                    "completion_tokens": usage.completion_tokens or _reply_tokens(reply),
                    "estimated": True,
                }
            )
        self.usage = self.usage.plus(usage)
        self.messages = with_summary(self.messages, reply.content or "")
        return turns

    def _remind_of_state(self, calls: Sequence[ToolCall]) -> None:
        """After `remind_every` tool calls without a read of the task state, a short note
        asks the model to re-read it (with the next request)."""
        if isinstance(self.hooks, NoHooks) or self.limits.remind_every <= 0:
            return
        for call in calls:
            reads = call.name == "read_file" and TASK_FILE in call.arguments
            self._unread_calls = 0 if reads else self._unread_calls + 1
        if self._unread_calls < self.limits.remind_every:
            return
        self.messages.append(
            ChatMessage(
                role="user",
                content=f"Reminder: {self._unread_calls} tool calls since you last read the "
                f"task state. Re-read it now (read_file {TASK_FILE}): the goal, the progress "
                "of every step and the blockers are there.",
            )
        )
        self._unread_calls = 0

    async def _checkpoint(self, step: int) -> None:
        await self.hooks.step_done(step, self.messages, self.usage, self.workspace.changed_files)

    async def _ask_model(self, step: int) -> ModelReply:
        await self._emit(EventKind.THINKING, "asking the model", step)
        started = time.monotonic()
        reply = await self.model.complete(self.messages, self.toolbox.specs())
        seconds = time.monotonic() - started
        usage = reply.usage
        if not usage.prompt_tokens or not usage.completion_tokens:
            # The endpoint reported nothing: an estimate (≈4 characters a token), marked so.
            usage = Usage(
                prompt_tokens=usage.prompt_tokens or estimate_tokens(self.messages),
                completion_tokens=usage.completion_tokens or _reply_tokens(reply),
                estimated=True,
            )
            reply = reply.model_copy(update={"usage": usage})
        self.usage = self.usage.plus(usage)
        await self.hooks.model_called(step, reply, usage, seconds)
        for note in reply.notes:
            await self._emit(EventKind.MESSAGE, f"model: {note}", step)
        self.messages.append(
            ChatMessage(
                role="assistant",
                content=reply.content if reply.content or reply.tool_calls else "",
                tool_calls=reply.tool_calls,
            )
        )
        if reply.content and reply.tool_calls:
            await self._emit(EventKind.MESSAGE, reply.content, step)
        return reply

    async def _run_tools(self, calls: Sequence[ToolCall], step: int) -> None:
        """The calls in order; with `check_after_edit`, the verdict of the tests the step's
        edits affect joins the result of its last edit."""
        self._edited = []
        results = [(call, await self._run_one(call, step)) for call in calls]
        verdict = await self._check_edits(step)
        if verdict:
            last = max(n for n, (_, r) in enumerate(results) if r.metadata.get("changed") is True)
            result = results[last][1]
            results[last] = (
                results[last][0],
                result.model_copy(update={"output": f"{result.output}\n{verdict}"}),
            )
        for call, result in results:
            text = result.as_text() if self.small else result.for_model()
            self.messages.append(ChatMessage(role="tool", tool_call_id=call.id, content=text))

    async def _run_one(self, call: ToolCall, step: int) -> ToolResult:
        """One tool call, logged and reported; the files it changed noted in `_edited`."""
        await self._emit(
            EventKind.TOOL_CALL, f"{call.name} {call.arguments[:120]}", step, tool=call.name
        )
        edits = self.workspace.edit_count
        await self.hooks.before_tool(step, call)
        started = time.monotonic()
        result = self.guard.refusal(call) or await self.toolbox.call(call)
        seconds = time.monotonic() - started
        changed = self.workspace.edit_count != edits
        await self.hooks.tool_done(step, call, result, seconds, changed)
        self.guard.record(call, result, self.workspace.edit_count)
        if changed and isinstance(path := result.metadata.get("path"), str):
            self._edited.append(path)
        summary = result.error or (result.output.splitlines()[0] if result.output else "")
        await self._emit(
            EventKind.TOOL_RESULT,
            f"{call.name}: {result.status.value}{': ' + summary if summary else ''}",
            step,
            tool=call.name,
            status=result.status.value,
        )
        return result

    # -- edits written in words, and the check after an edit ---------------------------------

    def _words_edits(self, reply: ModelReply, task: Task) -> Found:
        """The edits a reply without a tool call wrote in words (none when the task may not
        edit: its tool box has no edit_file); a whole Python file that left out methods gets
        them back unless the task may ask for one to go (`loop/keep.py`)."""
        if not reply.content or "edit_file" not in self.toolbox.tools:
            return Found([], [])
        ws = self.workspace
        seen = [ws.relative(path) for path in ws.read_hashes]
        found = edits_in_words(reply.content, self._current, seen)
        if may_drop(task.instruction):
            return found
        return replace(found, edits=[keep_left_out(edit) for edit in found.edits])

    async def _apply_words(self, found: Found, step: int) -> str:
        """Run the edits written in words as edit_file calls; what happened, for the model
        (starting with FAILED_WORDS when none applied)."""
        self._edited = []
        self._echo = bool(found.edits) and not found.problems
        for edit in found.edits:  # a small model's files before its first edit of them
            known = not self.small or edit.path in self._originals
            if not known and (text := self._current(edit.path)) is not None:
                self._originals[edit.path] = text
        lines: list[str] = []
        applied = 0
        for n, edit in enumerate(found.edits):
            result = await self._run_one(edit.call(f"words_{step}_{n}"), step)
            ok = result.status is ToolStatus.SUCCESS and result.metadata.get("changed") is True
            applied += ok
            said = result.output if ok else f"not applied: {result.error or result.output}"
            echo = result.status is ToolStatus.SUCCESS and result.metadata.get("changed") is False
            self._echo = self._echo and echo
            if echo:
                self._echoed = True
                said = (
                    f"not applied: this is {edit.path} as it is now, unchanged — you changed "
                    "nothing. Change the lines that make the tests fail"
                )
            lines.append(f"- {edit.path} ({edit.what}): {said}")
        for problem in found.problems:
            lines.append(f"- not used: {problem}")
        if not applied:
            files = dict.fromkeys(e.path for e in found.edits)
            return (
                f"{FAILED_WORDS}:\n"
                + "\n".join(lines)
                + ("" if self.small else "".join(self._as_it_is(rel) for rel in files))
                + "\nCopy the SEARCH part exactly from the file as it is now."
            )
        await self._emit(EventKind.MESSAGE, f"applied {applied} edit(s) written in words", step)
        return f"{APPLIED_WORDS}:\n" + "\n".join(lines)

    def _outcome(
        self, status: TaskStatus, summary: str, step: int, reason: str, verified: bool = True
    ) -> TaskOutcome:
        return TaskOutcome(
            status=status,
            summary=summary.strip(),
            steps=step,
            stop_reason=reason,
            usage=self.usage,
            changed_files=list(self.workspace.changed_files),
            verified=verified,
            checked=self.checked(verified and status is TaskStatus.COMPLETED),
            rechecked=self._checked.get("diagnostic", ""),
        )
