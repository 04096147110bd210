"""The tests' outcome pattern (`tests.scripts.outcome`): a re-check of the fix's diagnostic
matches only when the test names its verdict, and only that verdict."""

from __future__ import annotations

import re

import pytest

from tests.scripts import COMPLETED, RECHECKS, outcome

TOTALS = " — 2.1 s, 4 model calls, 3 tool runs, tokens: 11160 in, 55 out"


def said(verdict: str) -> str:
    return f"{COMPLETED} — diagnostic 'assert 3.0 == 4' at tests/test_calc.py:9 {verdict} (why)"


def test_without_a_verdict_only_an_outcome_without_a_recheck_matches() -> None:
    assert re.fullmatch(outcome(COMPLETED), COMPLETED + TOTALS)
    for verdict in RECHECKS:
        assert not re.fullmatch(outcome(COMPLETED), said(verdict) + TOTALS)


@pytest.mark.parametrize("verdict", RECHECKS)
def test_a_verdict_matches_that_recheck_only(verdict: str) -> None:
    assert re.fullmatch(outcome(COMPLETED, recheck=verdict), said(verdict) + TOTALS)
    assert not re.fullmatch(outcome(COMPLETED, recheck=verdict), COMPLETED + TOTALS)
    for other in set(RECHECKS) - {verdict}:
        assert not re.fullmatch(outcome(COMPLETED, recheck=verdict), said(other) + TOTALS)
