"""Every corpus command, at every level, gets exactly the expected decision."""

from __future__ import annotations

from collections import Counter

import pytest

from agent_lsp.safety.risk import Action
from tests.safety.conftest import Layout
from tests.safety.corpus import CASES

CODE = {Action.ALLOW: "A", Action.ASK: "Q", Action.DENY: "D"}


def test_the_corpus_is_big_enough_in_every_category() -> None:
    counts = Counter(category for category, _, _ in CASES)
    assert len(CASES) >= 150
    assert all(n >= 5 for n in counts.values()), counts


@pytest.mark.parametrize(
    ("category", "command", "expected"),
    CASES,
    ids=[f"{c}:{cmd[:50]!r}" for c, cmd, _ in CASES],
)
def test_decision_per_level(
    shared_layout: Layout, category: str, command: str, expected: str
) -> None:
    layout = shared_layout
    text = layout.fmt(command)
    got = "".join(
        CODE[layout.policy(level).command(text).action] for level in ("L0", "L1", "L2", "L3")
    )
    why = layout.policy("L2").command(text)
    assert got == expected, f"{category}: {command!r}: {why.rule}; {why.reasons}"
