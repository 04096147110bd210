"""Every case of the allow-grammar corpus gets exactly the expected decision at every level,
inside the OS sandbox and without one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from agent_lsp.safety.risk import Action
from tests.safety.conftest import Layout
from tests.safety.corpus_grammar import AWK, DASH, INTERPRETERS, PROGRAM_OPTIONS, SED, SUBSCRIPTS
from tests.safety.corpus_grammar import Case as Case
from tests.safety.corpus_grammar2 import ABBREVIATIONS, CD_AND_PATHS, OPTION_FILES, RUNS_PROGRAMS
from tests.safety.corpus_grammar3 import OVERWRITES, PROJECTS, VETTED

CODE = {Action.ALLOW: "A", Action.ASK: "Q", Action.DENY: "D"}
GROUPS: dict[str, Sequence[tuple[str, tuple[str, str]]]] = {
    "interpreter": INTERPRETERS,
    "sed": SED,
    "awk": AWK,
    "program-option": PROGRAM_OPTIONS,
    "subscript": SUBSCRIPTS,
    "dash": DASH,
    "runs-program": RUNS_PROGRAMS,
    "abbreviation": ABBREVIATIONS,
    "option-file": OPTION_FILES,
    "cd-and-paths": CD_AND_PATHS,
    "overwrite": OVERWRITES,
    "project": PROJECTS,
    "vetted": VETTED,
}
CASES: list[Case] = [
    (group, command, expected) for group, items in GROUPS.items() for command, expected in items
]


def test_the_grammar_corpus_is_big_enough() -> None:
    counts = Counter(group for group, _, _ in CASES)
    assert len(CASES) >= 400, len(CASES)
    assert all(n >= 20 for n in counts.values()), counts
    assert len({command for _, command, _ in CASES}) == len(CASES), "duplicate commands"


def decisions(layout: Layout, command: str, sandboxed: bool) -> str:
    return "".join(
        CODE[layout.policy(level, sandboxed=sandboxed).command(command).action]
        for level in ("L0", "L1", "L2", "L3")
    )


@pytest.mark.parametrize(
    ("group", "command", "expected"),
    CASES,
    ids=[f"{g}:{c[:60]!r}" for g, c, _ in CASES],
)
def test_grammar_decision_per_level(
    shared_layout: Layout, group: str, command: str, expected: tuple[str, str]
) -> None:
    layout = shared_layout
    text = layout.fmt(command)
    got = (decisions(layout, text, True), decisions(layout, text, False))
    why = layout.policy("L2").command(text)
    assert got == expected, f"{group}: {command!r}: {why.rule}; {why.reasons}"
