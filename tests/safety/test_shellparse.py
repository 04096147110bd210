"""The bash parser: every simple command found, quotes and escapes resolved, expansions
marked unknown, and what it cannot decide reported."""

from __future__ import annotations

import pytest

from agent_lsp.safety.shellparse import parse
from agent_lsp.safety.shellwords import UNKNOWN, decode_ansi_c, suspicious_char


def argvs(text: str) -> list[list[str]]:
    script = parse(text, home="/h", pwd="/w")
    assert script.problems == [], script.problems
    return [c.argv for c in script.commands]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ls -la", [["ls", "-la"]]),
        ("a; b && c || d | e & f", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
        ("a;b&&c||d|e", [["a"], ["b"], ["c"], ["d"], ["e"]]),
        ("a |& b", [["a"], ["b"]]),
        ("a\nb\n\nc", [["a"], ["b"], ["c"]]),
        ("{ a; b; } | c", [["a"], ["b"], ["c"]]),
        ("(a; (b))", [["a"], ["b"]]),
        ("if a; then b; elif c; then d; else e; fi", [["a"], ["b"], ["c"], ["d"], ["e"]]),
        ("while a; do b; done; until c; do d; done", [["a"], ["b"], ["c"], ["d"]]),
        ("for x in 1 2; do b; done", [["b"]]),
        ("! a | b", [["a"], ["b"]]),
        ("time -p a", [["a"]]),
        ("echo $(a $(b))", [["b"], ["a", UNKNOWN], ["echo", UNKNOWN]]),
        ("echo `a`", [["a"], ["echo", UNKNOWN]]),
        ('echo "x $(a) y"', [["a"], ["echo", f"x {UNKNOWN} y"]]),
        ("diff <(a) >(b)", [["a"], ["b"], ["diff", "/dev/fd/63", "/dev/fd/63"]]),
        ("r\\m -r\\f /", [["rm", "-rf", "/"]]),
        ("'r''m' \"-rf\" /", [["rm", "-rf", "/"]]),
        ("ls \\\n  -la", [["ls", "-la"]]),
        ("echo $'\\x72\\155\\n'", [["echo", "rm\n"]]),
        ('echo $"hi"', [["echo", "hi"]]),
        ("cat ~/x ~ ~+/y", [["cat", "/h/x", "/h", "/w/y"]]),
        ("echo $HOME ${HOME} $PWD", [["echo", "/h", "/h", "/w"]]),
        ("echo $? $$ $((1 + 2))", [["echo", "0", "0", "0"]]),
        ("echo a#b # comment; rm -rf /", [["echo", "a#b"]]),
        ("echo 'a;b' \"c|d\" e\\&f", [["echo", "a;b", "c|d", "e&f"]]),
        ("cat <<EOF\n$(a)\nEOF\nb", [["cat"], ["a"], ["b"]]),
        ("cat <<'EOF'\n$(a)\nEOF\nb", [["cat"], ["b"]]),
        ("cat <<-EOF\n\t$(a)\n\tEOF\n", [["cat"], ["a"]]),
        ("echo ${x:-$(a)}", [["a"], ["echo", UNKNOWN]]),
        ("echo `echo \\`a\\``", [["a"], ["echo", UNKNOWN], ["echo", UNKNOWN]]),
        ("x=1 y=$(a) cmd", [["a"], ["cmd"]]),
    ],
)
def test_commands_are_split_part_by_part(text: str, expected: list[list[str]]) -> None:
    assert argvs(text) == expected


def test_redirections_and_here_documents() -> None:
    script = parse("a 2>/dev/null >>out <in 3<>/dev/tcp/h/1 &>all 2>&1 <<<word <<EOF\nbody\nEOF\n")
    (cmd,) = script.commands
    shown = [(r.op, r.fd, r.target.value if r.target else None) for r in cmd.redirects]
    assert shown == [
        (">", 2, "/dev/null"),
        (">>", None, "out"),
        ("<", None, "in"),
        ("<>", 3, "/dev/tcp/h/1"),
        ("&>", None, "all"),
        (">&", 2, "1"),
        ("<<<", None, "word"),
        ("<<", None, "EOF"),
    ]
    assert cmd.redirects[-1].body == ["body\n"]


def test_assignments_and_words_flags() -> None:
    (cmd,) = parse("A=1 B=$X run $Y $(z) *.py {a,b} 'q*'", home="/h").commands[1:]
    assert [(n, w.value) for n, w in cmd.assigns] == [("A", "1"), ("B", UNKNOWN)]
    assert cmd.assigns[1][1].variable
    words = cmd.words
    assert words[1].dynamic and words[1].variable
    assert words[2].dynamic and not words[2].variable
    assert words[3].glob and not words[3].static
    assert words[4].brace
    assert words[5].static and words[5].value == "q*"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("echo 'open", "unterminated single quote"),
        ('echo "open', "unterminated double quote"),
        ("echo `open", "unterminated backquote"),
        ("echo $(open", "missing ')'"),
        ("a=(1 2)", "array assignments"),
        ("f() { a; }", "function definitions"),
        ("function f { a; }", "'function'"),
        ("case x in y) a;; esac", "'case'"),
        ("[[ -f x ]]", "'[['"),
        ("((x++))", "arithmetic commands"),
        ("for ((i=0;i<3;i++)); do a; done", "arithmetic for"),
        ("select x in a; do b; done", "'select'"),
        ("coproc a", "'coproc'"),
        ("cat <<EOF\nno end", "not terminated"),
        ("a {fd}>x", "named file-descriptor"),
        ("a )", "unexpected ')'"),
        ("ls\r", "U+000D"),
        ("ls\u200b", "ZERO WIDTH SPACE"),
        ("ls\u202e", "RIGHT-TO-LEFT OVERRIDE"),
        ("ls\u00a0-la", "NO-BREAK SPACE"),
        ("x" * 10_001, "longer than 10000"),
        ("true;" * 51, "more than 50 sub-commands"),
        ("echo " + "$(" * 12 + ")" * 12, "nested"),
    ],
)
def test_what_cannot_be_decided_is_reported(text: str, problem: str) -> None:
    problems = parse(text).problems
    assert any(problem in p for p in problems), problems


def test_parts_found_before_a_problem_are_kept() -> None:
    script = parse("rm -rf /; echo 'open")
    assert script.commands[0].argv == ["rm", "-rf", "/"]
    assert script.problems


def test_helpers() -> None:
    assert decode_ansi_c(r"\x41\u00e9\101\t\cA\q") == "AéA\t\x01\\q"
    assert suspicious_char("plain text\twith tab\n") is None
    assert suspicious_char("é ü 中文") is None
    assert suspicious_char("a\x1b[31m") is not None


@pytest.mark.parametrize(
    "text",
    [
        "echo $'a'",
        'echo $"a"',
        "ls {a,b}",
        "cat <<< x",
        "ls &> out",
        "ls |& cat",
        "cat <(ls)",
        "echo ${x/a/b}",
        "echo ${x:1}",
        "time ls",
        "ls 10>x",
    ],
)
def test_what_dash_reads_differently_is_a_problem_in_the_dash_dialect(text: str) -> None:
    assert parse(text, dialect="dash").problems
    assert not parse(text).problems  # bash reads it fine


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("echo $((x))", "arithmetic on variables"),
        ("echo ${a[i]}", "assigns or evaluates arithmetic"),
        ("echo ${s:i}", "assigns or evaluates arithmetic"),
        ("echo ${!x}", "assigns or evaluates arithmetic"),
        (": ${X:=1}", "assigns or evaluates arithmetic"),
        ("echo $[1]", "$[...]"),
        ("a[$(id)]=1", "array element"),
        ("for PATH in x; do ls; done", "a for loop setting PATH"),
    ],
)
def test_arithmetic_and_assigning_expansions_are_problems(text: str, problem: str) -> None:
    problems = parse(text).problems
    assert any(problem in p for p in problems), problems


def test_plain_expansions_are_fine() -> None:
    for text in ("echo $((1 + 2))", "echo ${#x} ${x:-a} ${x%.py} ${a[0]} ${a[@]}", "echo ${x:0:2}"):
        assert parse(text).problems == [], text


def test_commands_know_their_position() -> None:
    cmds = parse("a; b && c | d & e || { f; }").commands
    shown = [(c.argv[0], c.before, c.after, c.compound) for c in cmds]
    assert shown == [
        ("a", "", ";", 0),
        ("b", ";", "&&", 0),
        ("c", "&&", "|", 0),
        ("d", "|", "&", 0),
        ("e", "&", "||", 0),
        ("f", "||", ";", 1),
    ]
