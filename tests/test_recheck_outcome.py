"""`agent-lsp run` prints what was asked about a fix's diagnostic (a stopped editor fix task
continued from the terminal), once: not again when the summary already says it."""

from __future__ import annotations

import pytest

from agent_lsp.cli.commands import _print_outcome  # pyright: ignore[reportPrivateUsage]
from agent_lsp.messages import TaskOutcome, TaskStatus

GONE = "diagnostic 'undefined name 'valeus'' at stats.py:5 gone (re-checked by pylsp)"


def test_the_cli_outcome_names_the_recheck(capsys: pytest.CaptureFixture[str]) -> None:
    done = TaskOutcome(status=TaskStatus.COMPLETED, summary="Fixed.", steps=2, rechecked=GONE)
    _print_outcome(done)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "■ completed after 2 steps: Fixed."
    assert lines[1] == f"  re-checked: {GONE}"
    assert lines[2].startswith("  0.0 s, 0 model calls, 0 tool runs, tokens: ")


def test_a_summary_that_says_it_is_not_repeated(capsys: pytest.CaptureFixture[str]) -> None:
    still = GONE.replace("gone (re-checked by pylsp)", "still there (pylsp reports it at line 4)")
    failed = TaskOutcome(
        status=TaskStatus.FAILED, summary=f"not fixed: {still}", steps=3, rechecked=still
    )
    _print_outcome(failed)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"■ failed after 3 steps: not fixed: {still}"
    assert len(lines) == 2 and "re-checked" not in lines[1]
