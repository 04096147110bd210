"""Whether a task is done, decided by checks and not by the model's word: the tests the
changes affect, then the suite (SPEC D3), the diagnostic's own source for a fix, a review of
the changed files; and, with `check_after_edit`, the tests an edit affects, run at once. The
agent loop (`loop/agent.py`) takes these as a part of itself: they read and set its state."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from adapters import TestReport
from agent_lsp.loop.done import DiagnosticCheck, recheck, targeted_tests, text_key
from agent_lsp.loop.hooks import Limits, ReviewCheck, TaskHooks
from agent_lsp.loop.scope import unseen_changes
from agent_lsp.loop.verify import (
    NotPermittedError,
    SourceLine,
    Verifier,
    format_report,
    source_lines,
)
from agent_lsp.messages import AgentEvent, ChatMessage, EventKind
from agent_lsp.project.workspace import Workspace
from agent_lsp.seams import EditorChannel
from agent_lsp.task import Task, TaskKind

logger = logging.getLogger(__name__)

WORDS_ONCE = "If you answer in words only again, the task stops here."
KEEP_WORKING = "Keep working until the tests pass: call the tools to read, edit and test. "


def not_passing(
    what: str,
    report: TestReport,
    small: bool = False,
    source: SourceLine | None = None,
    root: Path | None = None,
) -> str:
    """The failures for the model; for a small model shorter, with each failing line's text
    (its next answer is a changed file, as the reminder after this says — not a tool call)."""
    if small:
        return (
            f"The task is not done: {what} on the current text.\n"
            + format_report(report, limit=3, tail=12, hint=False, source=source, root=root)
            + "\n"
            + WORDS_ONCE
        )
    return (
        f"The task is not done: {what} on the current text.\n"
        + format_report(report, root=root)
        + "\n"
        + KEEP_WORKING
        + WORDS_ONCE
    )


class DoneChecks:
    """The checks of a task's agent (`Agent` is one): what they read of it, and their state."""

    workspace: Workspace
    verifier: Verifier | None
    limits: Limits
    hooks: TaskHooks
    channel: EditorChannel
    messages: list[ChatMessage]
    small: bool
    _edited: list[str]  # the files this step's tool calls changed
    _attempts: int  # replies that tried a fix and left the task not done

    def _init_checks(self) -> None:
        self.diagnostic_check: DiagnosticCheck | None = None  # re-asks a fix's diagnostic
        # the review of the changed files before done (errors only: a syntax error, a leaked
        # secret, the linter's error on an added line), by the session; None: no review
        self.review_check: ReviewCheck | None = None
        self._told_review = False  # the model was told once what the review found
        self._checked: dict[str, str] = {}  # what proved the outcome, by kind, for its summary
        # test verdicts by (selection, hash of the changed files' text): never run twice
        self._verdicts: dict[tuple[tuple[str, ...], str], TestReport] = {}
        self._hints_told: set[str] = set()  # a test run's hint is shown once per task
        self._told_remains = False  # the model was told once its diagnostic is still there
        self._failed_check: str | None = None  # why the task ends failed at its end check
        self._judged: TestReport | None = None  # the verdict of the last check of the tests

    async def _check_edits(self, step: int) -> str:
        """With `check_after_edit`: the tests affected by this step's edits, run at once; their
        verdict ("" when nothing ran)."""
        edited, self._edited = self._edited, []
        if not self.limits.check_after_edit or not edited or self.verifier is None:
            return ""
        selection = await targeted_tests(self.workspace.root, edited, limit=5)
        if not selection.files:
            return ""
        shown = selection.shown()
        await self._emit(EventKind.TOOL_CALL, f"checking the edit: {shown}", step)
        try:
            report = await self.verifier.run(self.workspace, selection.files)
        except NotPermittedError as exc:
            await self._emit(EventKind.TOOL_RESULT, f"edit not checked: {exc}", step)
            return ""
        await self._emit(EventKind.TOOL_RESULT, f"after the edit: {report.summary()}", step)
        self._attempts += not report.ok  # a try at a fix the tests judged
        return f"Checked after this edit, the tests affected by it ({shown}): " + (
            report.summary()
            if report.ok
            else format_report(
                report, limit=3, source=source_lines(self.workspace), root=self.workspace.root
            )
        )

    async def _check_done(self, step: int, task: Task) -> tuple[bool, str, str]:
        """Done is decided by the tests and, for a fix, by the diagnostic's own source, not
        by the model's word: (done, the feedback when not, why done is unverified — "" when
        the tests proved it or nothing needed proof). A diagnostic still reported after the
        tests pass goes back to the model once; the next time the task fails."""
        done, feedback, unverified = await self._check_tests(step, task)
        if done and not feedback and (said := await self._review(step)) is not None:
            return False, said, ""
        if done and not feedback:
            await self._flag_unseen(step, task)
        if not done or task.kind is not TaskKind.FIX or task.diagnostic is None:
            return done, feedback, unverified
        await self._emit(EventKind.TOOL_CALL, "checking: is the diagnostic gone?", step)
        result = await recheck(self.diagnostic_check, task, self.workspace)
        self._checked["diagnostic"] = result.detail
        await self._emit(EventKind.TOOL_RESULT, result.detail, step)
        if result.state != "present":
            return True, "", unverified
        if self._told_remains:
            passed = "" if unverified else " although the tests pass"
            self._failed_check = f"not fixed: {result.detail}{passed}"
            return False, "", ""
        self._told_remains = True
        passing = "" if unverified else "The tests pass, but "
        return (
            False,
            f"The task is not done: {passing}the problem you were asked to fix is still "
            f"reported: {result.detail}.\nFix its cause (read the code at that line again), "
            "then finish. If you answer in words only again, the task stops here.",
            "",
        )

    async def _review(self, step: int) -> str | None:
        """The review of the changed files before done: what the model is told, once, when it
        found errors (None: nothing found, nothing to review, or told already — then the
        findings go into what the outcome says was checked)."""
        changed = list(self.workspace.changed_files)
        if self.review_check is None or not changed:
            return None
        await self._emit(EventKind.TOOL_CALL, "checking: a review of the changed files", step)
        errors = await self.review_check(changed)
        shown = "\n".join(f"- {e}" for e in errors[:8])
        await self._emit(
            EventKind.TOOL_RESULT,
            f"review: {len(errors)} error(s)" + (f"\n{shown}" if shown else ""),
            step,
        )
        if not errors:
            return None
        if self._told_review:
            self._checked["review"] = f"review: {len(errors)} error(s) left: " + "; ".join(
                errors[:3]
            )
            return None
        self._told_review = True
        return (
            "The task is not done: the tests pass, but the review of your change found:\n"
            f"{shown}\nFix these in the files you changed, then finish. {WORDS_ONCE}"
        )

    async def _flag_unseen(self, step: int, task: Task) -> None:
        """Flags, for the user's review, the changed files the task concerns by no sign (never
        named, read or shown; see `scope`): said as it is found and in the outcome. Not sent
        back to the model: the tests passed, and a small model told so undoes a right fix."""
        if not self.workspace.changed_files or task.kind in (TaskKind.EXPLAIN, TaskKind.IMPROVE):
            return
        messages = list(self.messages)
        try:
            unseen = await asyncio.to_thread(unseen_changes, task, self.workspace, messages)
        except Exception as exc:  # a review that breaks must not fail a task whose tests passed
            logger.warning("the review of which files the task concerns failed: %r", exc)
            return
        if not unseen:
            self._checked.pop("unseen", None)
            return
        files = ", ".join(unseen[:5]) + (f" and {len(unseen) - 5} more" if len(unseen) > 5 else "")
        said = f"review: changed {files}, which the task never named and the agent never read"
        if self._checked.get("unseen") != said:  # said once, again only when it changed
            await self._emit(EventKind.MESSAGE, said, step, unseen=unseen)
        self._checked["unseen"] = said

    async def _check_tests(self, step: int, task: Task) -> tuple[bool, str, str]:
        """The tests affected by the changes first (the test files that import a changed
        file, and changed test files), then the full suite (SPEC D3)."""
        self._judged = None  # this check's verdict only: never an earlier text's
        if self.verifier is None:
            if task.kind in (TaskKind.EXPLAIN, TaskKind.IMPROVE):  # nothing edited to check
                return True, "", ""
            return True, "", "no test runner found, so nothing checked the result"
        if self.verifier.passed_since(self.workspace):
            self._checked.setdefault("full", self._summary_of_last())
            return True, "", ""
        try:
            changed = list(self.workspace.changed_files)
            selection = await targeted_tests(self.workspace.root, changed)
            key = text_key(self.workspace, changed)
            if selection.files:
                targets = list(selection.files)
                shown = selection.shown()
                await self._emit(EventKind.TOOL_CALL, f"checking: the affected tests {shown}", step)
                report, again = await self._run_once(selection.files, key, targets)
                self._judged = report
                await self.hooks.tests_checked(
                    step, report.ok, f"targeted {shown}: {report.summary()}{again}"
                )
                await self._tell_result("affected tests", report, step, again)
                if not report.ok:
                    return (
                        False,
                        not_passing(
                            f"the tests affected by your change ({shown}) do not pass",
                            report,
                            self.small,
                            source_lines(self.workspace),
                            self.workspace.root,
                        ),
                        "",
                    )
                self._checked["targeted"] = (
                    f"affected tests ({shown}): {report.summary(with_hint=False)}"
                )
            await self._emit(EventKind.TOOL_CALL, "checking: running the test suite", step)
            report, again = await self._run_once((), key)
            self._judged = report
        except NotPermittedError as exc:
            await self._emit(EventKind.MESSAGE, f"{exc}: the result is not verified", step)
            return True, "", str(exc)
        await self.hooks.tests_checked(step, report.ok, report.summary() + again)
        await self._tell_result("tests", report, step, again)
        if report.ok:
            self._checked["full"] = f"full suite: {report.summary(with_hint=False)}"
            return True, "", ""
        return (
            False,
            not_passing(
                "the test suite does not pass",
                report,
                self.small,
                source_lines(self.workspace),
                self.workspace.root,
            ),
            "",
        )

    async def _run_once(
        self, selection: tuple[str, ...], key: str, targets: Sequence[str] = ()
    ) -> tuple[TestReport, str]:
        """The tests of ``selection`` (() for the full suite) on the current text, run at most
        once per text: the same selection on the same text (``key``) keeps its verdict (the
        second item then says so)."""
        assert self.verifier is not None
        cached = self._verdicts.get((selection, key))
        if cached is not None:
            return cached, " (the same tests on the same text: not run again)"
        report = await self.verifier.run(self.workspace, targets)
        self._verdicts[(selection, key)] = report
        return report, ""

    async def _tell_result(self, what: str, report: TestReport, step: int, again: str = "") -> None:
        """The totals of a check's test run (`again`: it was not run again); its hint (the
        virtualenv it ran without...) once per task, on a line of its own, not again on every
        later run's line."""
        summary = report.summary(with_hint=False)
        await self._emit(EventKind.TOOL_RESULT, f"{what}: {summary}{again}", step)
        if report.hint and report.hint not in self._hints_told:
            self._hints_told.add(report.hint)
            await self._emit(EventKind.MESSAGE, f"hint: {report.hint}", step)

    def _summary_of_last(self) -> str:
        report = self.verifier.last_report if self.verifier is not None else None
        return f"full suite: {report.summary(with_hint=False)}" if report is not None else ""

    def checked(self, verified: bool) -> str:
        """What was checked, for the outcome: "verified: …" or "not verified: …"."""
        parts = [
            self._checked[k]
            for k in ("targeted", "full", "diagnostic", "review", "unseen")
            if self._checked.get(k)
        ]
        if not parts:
            return ""
        return ("verified: " if verified else "not verified: ") + "; ".join(parts)

    async def _emit(self, kind: EventKind, message: str, step: int = 0, **data: object) -> None:
        await self.channel.report(AgentEvent(kind=kind, message=message, step=step, data=data))
