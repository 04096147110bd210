"""What a new user meets first, run as they run it (the CLI as a subprocess, the fake model over
HTTP, real pytest): a model endpoint that cannot work is named with the next step (no crash, no
"Connection error"); the demo's undo command works from anywhere; the terminal output says
each thing once; `--help` speaks plainly; the totals count the wait before the first step."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from tests.conftest import BUG, FIX
from tests.fakes.openai_server import Error, FakeOpenAIServer, Reply, ToolCall
from tests.test_cli import agent_lsp


def _unconfigured(server_env: dict[str, str]) -> dict[str, str]:
    """The environment of someone who configured nothing (no AGENT_LSP_*, no OPENAI_*)."""
    return {k: v for k, v in server_env.items() if not k.startswith(("AGENT_LSP_", "OPENAI_"))}


def _plain_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("no tests here\n")
    return folder


def test_a_port_out_of_range_is_named_not_an_internal_error(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    env = {**server_env, "AGENT_LSP_BASE_URL": "http://127.0.0.1:99999/v1"}
    doctor = agent_lsp("doctor", "--root", str(project), env=env)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "the model endpoint 'http://127.0.0.1:99999/v1' is not a valid URL" in doctor.stdout
    assert "next: set [model] baseUrl (from environment AGENT_LSP_BASE_URL)" in doctor.stdout
    assert "a port from 1 to 65535" in doctor.stdout
    assert doctor.stdout.rstrip().endswith("1 problem(s): see the next steps above")
    assert doctor.stderr == ""  # no "internal error: ExceptionGroup", no trace file named

    run = agent_lsp("run", "fix it", "--root", str(project), env=env)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == ""  # nothing started
    assert "agent-lsp: the model endpoint 'http://127.0.0.1:99999/v1' is not a valid URL" in (
        run.stderr
    )
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert (project / "calc.py").read_text().count(BUG) == 1
    # Nothing was left half-begun: the next run is not offered an interrupted task.
    assert not list((project / ".agent-lsp").glob("state/**/*.json"))


def test_a_base_url_without_a_scheme_is_named_with_the_whole_url_to_write(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    env = {**server_env, "AGENT_LSP_BASE_URL": "localhost:8080"}
    doctor = agent_lsp("doctor", "--root", str(project), env=env)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "the model endpoint 'localhost:8080' is not an http:// or https:// URL" in (
        doctor.stdout
    )
    assert "with its scheme: http://localhost:8080/v1" in doctor.stdout
    assert "Connection error" not in doctor.stdout

    run = agent_lsp("run", "fix it", "--root", str(project), env=env)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.splitlines() == [
        "agent-lsp: the model endpoint 'localhost:8080' is not an http:// or https:// URL",
        "  next: write [model] baseUrl (from environment AGENT_LSP_BASE_URL) in full, with its "
        "scheme: http://localhost:8080/v1",
    ]
    assert fake_openai.requests == []


def test_with_nothing_configured_the_missing_key_is_named(
    project: Path, server_env: dict[str, str]
) -> None:
    env = _unconfigured(server_env)
    doctor = agent_lsp("doctor", "--root", str(project), env=env)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    out = doctor.stdout
    assert "model: gpt-4o-mini at https://api.openai.com/v1" in out
    assert "no API key for https://api.openai.com/v1 (baseUrl from default)" in out
    assert "next: set AGENT_LSP_API_KEY (or OPENAI_API_KEY)" in out
    assert "or use a local server: AGENT_LSP_BASE_URL=http://127.0.0.1:11434/v1" in out
    assert "NOT reachable" not in out and "Connection error" not in out

    run = agent_lsp("run", "fix it", "--root", str(project), env=env)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == ""
    assert run.stderr.startswith(
        "agent-lsp: no API key for https://api.openai.com/v1 (baseUrl from default)"
    )
    assert "cannot reach the model" not in run.stderr


def test_the_demo_prints_an_undo_command_that_works_from_another_folder(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    env = _unconfigured(server_env)  # the demo needs no model
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    target = tmp_path / "demo"
    done = agent_lsp("demo", "--dir", str(target), env=env, cwd=here)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "calc.py").read_text().count(FIX) == 1
    line = next(x for x in done.stdout.splitlines() if x.startswith("  undo: "))
    command = shlex.split(line.removeprefix("  undo: ").removesuffix(" [--all]"))
    assert command[:2] == ["agent-lsp", "undo"]
    assert command[2:4] == ["--root", str(target.resolve())]
    undone = agent_lsp(*command[1:], env=env, cwd=elsewhere)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert (target / "calc.py").read_text().count(BUG) == 1  # the demo's fix reverted


def test_a_run_in_the_project_prints_the_undo_without_root(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": BUG, "new_text": FIX})
            ]
        ),
        Reply(tool_calls=[ToolCall("run_tests", {})]),
        Reply("Fixed."),
    )
    done = agent_lsp("run", "fix average", env=server_env, cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^  undo: agent-lsp undo --task \w+ \[--all\]$", done.stdout, re.M)


def test_a_model_retry_is_said_once_as_progress_not_as_a_log_line(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Error(503, "busy"), Reply("All done."))
    done = agent_lsp(
        "run", "tidy the notes", "--root", str(_plain_folder(tmp_path)), env=server_env
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "· model: retry 1 of 2 after HTTP 503" in done.stdout
    assert "retry 1 of 2" not in done.stderr
    assert "agent_lsp.models" not in done.stderr and " WARNING: " not in done.stderr
    verbose = agent_lsp(
        "-v", "run", "tidy the notes", "--root", str(tmp_path / "plain"), env=server_env
    )  # the script is used up: the model answers its default; -v still logs everything
    assert "agent_lsp" in verbose.stderr


def test_the_virtualenv_hint_is_said_once_per_task(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    # The model edits and stops: agent-lsp runs the affected tests, then the whole suite, both
    # with its own Python (the sample project has no virtualenv): one hint for both lines.
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": BUG, "new_text": FIX})
            ]
        ),
        Reply("Fixed."),
    )
    done = agent_lsp("run", "fix average", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    results = [x for x in lines if "← affected tests: " in x or "← tests: " in x]
    assert len(results) == 2, done.stdout
    assert all("hint" not in x for x in results)
    hints = [x for x in lines if "no virtualenv found" in x]
    assert len(hints) == 1, done.stdout
    assert re.fullmatch(r"\[ 3\] · hint: no virtualenv found in .*", hints[0])


def test_help_names_the_root_markers_not_a_constant(server_env: dict[str, str]) -> None:
    done = agent_lsp("--help", env=server_env)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "ROOT_MARKERS" not in text
    assert "holding one of .agent-lsp, pyproject.toml, setup.py, package.json, go.mod, .git" in text


def test_the_totals_count_the_start_up(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    # A slow start (imports on a loaded machine), made certain: the interpreter sleeps 3 s
    # before agent-lsp's first line runs. The user waited for it; the totals say so.
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text("import time\n\ntime.sleep(3)\n")
    env = {
        **server_env,
        "PYTHONPATH": os.pathsep.join(
            [str(slow), *server_env.get("PYTHONPATH", "").split(os.pathsep)]
        ).rstrip(os.pathsep),
    }
    fake_openai.script(Reply("All done."))
    done = agent_lsp("run", "tidy the notes", "--root", str(_plain_folder(tmp_path)), env=env)
    assert done.returncode == 3, done.stdout + done.stderr
    totals = next(x for x in done.stdout.splitlines() if "model call" in x)
    seconds = float(totals.split()[0])
    assert seconds >= 3.0, totals
