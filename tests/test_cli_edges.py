"""The CLI at its edges, as a user meets them: Ctrl-C, a closed pipe, a folder in the way, a
missing server, an unexpected error, a run started from a subfolder. Never a traceback."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import BUG, FIX, interruptible
from tests.fakes.openai_server import FakeOpenAIServer, Hang
from tests.scripts import fix_average_script
from tests.test_cli import agent_lsp

TASK = "make the failing test pass"


def _no_trace(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and 'File "' not in text, text


def test_ctrl_c_is_one_line_with_the_way_to_resume_and_the_task_resumes(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    read, edit, run_tests, answer = fix_average_script()
    fake_openai.script(read, edit, Hang(120))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "run", TASK, "--root", str(project)],
        preexec_fn=interruptible,
        env=server_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fake_openai.wait_for_requests(3, timeout=120)  # waiting on the model's third reply
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, out + err
    _no_trace(out, err)
    assert err.strip().splitlines()[-1] == (
        "agent-lsp: interrupted; resume with: agent-lsp run --resume"
    )
    fake_openai.script(run_tests, answer)
    done = agent_lsp("run", "--resume", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"▶ resumed at step 2: {TASK}"
    assert (project / "calc.py").read_text().count(FIX) == 1


def test_a_closed_pipe_ends_the_log_quietly(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    assert agent_lsp("run", TASK, "--root", str(project), env=server_env).returncode == 0
    [log] = (project / ".agent-lsp" / "logs").glob("*.jsonl")
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines + [lines[-1]] * 20_000) + "\n")  # far more than a pipe holds
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_lsp", "log", "--json", "--root", str(project)],
        env=server_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # `| head -1`: read one line, then go away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert json.loads(first)["ts"]
    _no_trace(err)
    assert "BrokenPipe" not in err and "Exception ignored" not in err
    assert proc.returncode == 0


def test_demo_into_a_folder_that_is_not_empty_is_refused(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("my notes\n")
    done = agent_lsp("demo", "--dir", str(target), env=server_env)
    assert done.returncode == 2
    _no_trace(done.stdout, done.stderr)
    assert done.stderr.strip() == (
        f"agent-lsp demo: {target} already exists and is not an empty folder; give a new "
        "folder (it is created) or an empty one"
    )
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert (target / "notes.txt").read_text() == "my notes\n"


def test_wrapping_a_server_that_is_not_installed_is_one_line(server_env: dict[str, str]) -> None:
    done = agent_lsp("serve", "--wrap", "--", "no-such-language-server-xyz", env=server_env)
    assert done.returncode != 0
    _no_trace(done.stdout, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1
    assert "no-such-language-server-xyz" in done.stderr


def test_an_unexpected_error_is_one_line_naming_the_trace_file(
    project: Path, server_env: dict[str, str]
) -> None:
    config = Path(server_env["HOME"]) / ".config" / "agent-lsp"
    (config / "trusted.toml").mkdir(parents=True)  # a folder where the trust file goes
    done = agent_lsp("trust", "--root", str(project), env=server_env)
    assert done.returncode == 70
    _no_trace(done.stdout, done.stderr)
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("agent-lsp: internal error: IsADirectoryError: ")
    trace = Path(line.rsplit("full trace in ", 1)[1].rstrip(")"))
    assert trace.is_file() and "Traceback (most recent call last)" in trace.read_text()


def test_trust_never_rewrites_a_trust_file_it_cannot_read(
    project: Path, server_env: dict[str, str]
) -> None:
    config = Path(server_env["HOME"]) / ".config" / "agent-lsp"
    config.mkdir(parents=True)
    trust_file = config / "trusted.toml"
    # The user's own list, with a hand-made typo: rewriting it would lose the other entry.
    before = b'[[workspace]]\npath = "/home/me/other"\ntrusted_at = "2026-01-01"\n\n[[workspace\n'
    trust_file.write_bytes(before)
    for args in (("trust",), ("trust", "--remove")):
        done = agent_lsp(*args, "--root", str(project), env=server_env)
        assert done.returncode == 1, done.stderr
        _no_trace(done.stdout, done.stderr)
        [line] = done.stderr.strip().splitlines()
        assert line.startswith(f"agent-lsp: cannot change {trust_file}: it is not valid TOML")
        assert line.endswith("nothing was changed — fix the file or remove it")
        assert trust_file.read_bytes() == before


def test_run_from_a_subfolder_works_on_the_project(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    done = agent_lsp("run", TASK, env=server_env, cwd=project / "tests")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "calc.py").read_text().count(FIX) == 1
    assert (project / "calc.py").read_text().count(BUG) == 0
    assert (project / ".agent-lsp").is_dir() and not (project / "tests" / ".agent-lsp").exists()


def test_a_broken_user_config_is_reported_once_and_the_run_goes_on(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    config = Path(server_env["HOME"]) / ".config" / "agent-lsp" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[model\nname = 'x'\n")
    fake_openai.script(*fix_average_script())
    done = agent_lsp("run", TASK, "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    _no_trace(done.stdout, done.stderr)
    said = (done.stdout + done.stderr).count("Expected ']' at the end of a table declaration")
    assert said == 1, done.stdout + done.stderr
