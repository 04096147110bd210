"""The option grammar parser: clusters, attached and separate values, `--`, options after
operands, unique prefixes of long options, and the sed script reader."""

from __future__ import annotations

import pytest

from agent_lsp.safety.options import parse_args, spec
from agent_lsp.safety.sedscript import effects
from agent_lsp.safety.shellwords import UNKNOWN, Word

SORT = spec(
    "-r --reverse", "-o --output =w", "-k --key =", "--check =?", "-c", "--compress-program =x"
)


def words(*texts: str) -> list[Word]:
    return [Word(t, t, dynamic=UNKNOWN in t) for t in texts]


def test_clusters_attached_and_separate_values() -> None:
    parsed = parse_args(SORT, words("-rk2", "-o", "out", "-oout2", "--output=out3", "in"))
    assert [(g.name, g.value.value if g.value else None) for g in parsed.given] == [
        ("--reverse", None),
        ("--key", "2"),
        ("--output", "out"),
        ("--output", "out2"),
        ("--output", "out3"),
    ]
    assert [w.value for _, w in parsed.operands] == ["in"]
    assert parsed.clean


def test_options_after_operands_and_the_end_of_options() -> None:
    parsed = parse_args(SORT, words("in", "-o", "out", "--", "-r"))
    assert parsed.has("--output") and not parsed.has("--reverse")
    assert [w.value for _, w in parsed.operands] == ["in", "-r"]
    stops = spec("-v", permute=False)
    assert [w.value for _, w in parse_args(stops, words("prog", "-v")).operands] == ["prog", "-v"]


@pytest.mark.parametrize(
    ("word", "names", "clean"),
    [
        ("--out=x", ["--output"], False),
        ("--rev", ["--reverse"], False),
        ("--reverse", ["--reverse"], True),
        ("--c", ["--check", "--compress-program"], False),
        ("--nope", [], False),
    ],
)
def test_long_options_resolve_as_getopt_long_does(word: str, names: list[str], clean: bool) -> None:
    parsed = parse_args(SORT, words(word))
    assert sorted(g.name for g in parsed.given) == names
    assert parsed.clean is clean


def test_unknown_and_dynamic_options_are_reported() -> None:
    parsed = parse_args(SORT, words("-rZ", f"-{UNKNOWN}", UNKNOWN))
    assert parsed.unknown == [(0, "-Z")]
    assert [i for i, _ in parsed.dynamic] == [1, 2]
    assert not parsed.clean


def test_optional_values_attach_only() -> None:
    parsed = parse_args(SORT, words("--check", "in", "--check=quiet"))
    assert [g.value.value if g.value else None for g in parsed.given] == [None, "quiet"]
    assert [w.value for _, w in parsed.operands] == ["in"]


@pytest.mark.parametrize(
    ("script", "kinds"),
    [
        ("p", []),
        ("1,5p;$d", []),
        ("s/a/b/g", []),
        ("s/a/b/e", ["exec"]),
        ("1e id", ["exec"]),
        ("w out", ["write"]),
        ("s/a/b/w out", ["write"]),
        ("r /etc/passwd", ["read"]),
        ("a text; e id", []),
        (":a;e id", ["exec"]),
        ("/x/{p;e id\n}", ["exec"]),
        ("y/ab/cd/", []),
        ("s/[/]/x/", ["undecidable", "unknown"]),
        ("L", ["unknown"]),
    ],
)
def test_sed_scripts_are_read_for_what_they_may_do(script: str, kinds: list[str]) -> None:
    assert [kind for kind, _ in effects(script)] == kinds
