"""Every string a repository or a model brings reaches the terminal shown, never sent: the real
CLI's stdout and stderr bytes hold no ESC, BEL or carriage return from a shipped log, a memory
note, a test's output or a model's summary (`agent_lsp.cli.output.shown`)."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

from agent_lsp.cli.output import shown
from tests.fakes.openai_server import FakeOpenAIServer, Reply

CLIP = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"  # OSC 52: write the clipboard
ERASE = "\x1b[2K\r"  # erase the line, back to its start


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agent_lsp", *args],
        env=env,
        capture_output=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def assert_safe(done: subprocess.CompletedProcess[bytes]) -> str:
    for stream in (done.stdout, done.stderr):
        assert b"\x1b" not in stream and b"\x07" not in stream and b"\r" not in stream, stream
    return done.stdout.decode()


def test_shown_escapes_controls_and_keeps_newlines_and_tabs() -> None:
    assert shown(f"a{CLIP}b{ERASE}c\n\td\u202ee\u2028") == (
        "a\\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\u0007b\\u001b[2K\\u000dc\n\td"
        "\\u202ee\\u2028"
    )
    assert shown(shown(CLIP)) == shown(CLIP)
    assert shown("naïve 日本語 ok") == "naïve 日本語 ok"


def test_shown_escapes_every_control_and_format_character_of_this_python() -> None:
    """The table in `output` against `unicodedata`: nothing of those categories gets through,
    nothing printable is escaped (an unassigned code point may be: a newer Unicode's)."""
    escaped = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    for point in range(sys.maxunicode + 1):
        ch = chr(point)
        category = unicodedata.category(ch)
        must = category in escaped and ch not in "\n\t"
        assert (shown(ch) != ch) == must or (category == "Cn" and shown(ch) != ch), hex(point)


def test_a_shipped_log_and_memory_note_are_printed_escaped(
    project: Path, server_env: dict[str, str]
) -> None:
    logs = project / ".agent-lsp" / "logs"
    logs.mkdir(parents=True)
    entry = {"ts": "2026-01-01T00:00:00", "source": f"x{CLIP}", "event": "note", "text": ERASE}
    raw = '{"ts": "2026-01-01T00:00:01", "source": "x' + CLIP + '", "event": "note"}\n'
    (logs / "20260101-000000-1234.jsonl").write_text(json.dumps(entry) + "\n" + raw)
    memory = project / ".agent-lsp" / "memory"
    memory.mkdir(parents=True)
    (memory / "2026-01-01--planted.md").write_text(
        f"# all good{CLIP}\n\n- date: 2026-01-01\n- tags: a{ERASE}\n\n## Goal\nfine{CLIP}\n"
    )

    for args in (
        ("log",),
        ("log", "--json"),
        ("memory", "list"),
        ("memory", "show", "planted"),
        ("memory", "search", "good"),
    ):
        done = run(*args, "--root", str(project), env=server_env)
        out = assert_safe(done)
        assert done.returncode == 0, (args, out, done.stderr)
        if args[0] == "memory" and args[1] != "search":
            assert "all good\\u001b]52;c;" in out, (args, out)
        if args == ("log", "--json"):
            assert '"source": "x\\u001b]52;c;' in out, out


def test_a_models_summary_and_a_tests_output_are_printed_escaped(
    project: Path, server_env: dict[str, str], fake_openai: FakeOpenAIServer
) -> None:
    (project / "tests" / "test_noise.py").write_text(
        f"def test_noise():\n    print({CLIP!r})\n    assert False, {ERASE!r}\n"
    )
    tested = run("test", "--root", str(project), env=server_env)
    assert tested.returncode != 0
    assert_safe(tested)

    plain = project.parent / "plain"  # no suite: the model's answer ends the task
    plain.mkdir()
    (plain / "README.md").write_text("nothing to test\n")
    fake_openai.script(Reply(f"Done.{CLIP} Nothing to see{ERASE}"))
    ran = run("run", "say hi", "--max-steps", "2", "--root", str(plain), env=server_env)
    out = assert_safe(ran)
    assert "Done.\\u001b]52;c;" in out, out
