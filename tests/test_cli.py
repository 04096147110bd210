"""The headless CLI as a user runs it: a subprocess, the fake model over HTTP, real pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import BUG, FIX
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import fix_average_script, tool_messages


def agent_lsp(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_lsp", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_run_completes_a_task_and_exits_zero(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    done = agent_lsp("run", "make the failing test pass", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "calc.py").read_text().count(FIX) == 1  # headless: written on disk
    lines = done.stdout.splitlines()
    assert lines[0] == "▶ started: make the failing test pass"
    assert '[ 1] → read_file {"path": "calc.py"}' in lines
    assert (
        "[ 3] ← run_tests: success: pytest: 2 passed, 0 failed, 0 errors, 0 skipped"
        in "\n".join(lines)
    )
    assert any(line.startswith("■ completed after 4 steps: Fixed average()") for line in lines)
    first = fake_openai.requests[0]["messages"][1]["content"]
    assert first.startswith("make the failing test pass")
    assert "2 passed" in tool_messages(fake_openai.requests[3])[2]


def test_run_exits_nonzero_when_the_task_is_not_done(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply("Done!"), Reply("Really done!"))
    done = agent_lsp("run", "fix it", "--root", str(project), "--max-steps", "2", env=server_env)
    assert done.returncode == 1
    assert "■ failed after 2 steps: stopped: the model did not continue: Really done!" in (
        done.stdout
    )
    assert (project / "calc.py").read_text().count(BUG) == 1


def test_run_continue_goes_on_with_the_stopped_task_and_the_hint(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply("Done!"), Reply("Really done!"))
    stopped = agent_lsp("run", "fix it", "--root", str(project), env=server_env)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    # the outcome says how to go on (with --root: the test runs in another folder)
    assert f"agent-lsp run --root {project.resolve()} --continue" in stopped.stdout
    before = fake_openai.requests[-1]["messages"]

    fake_openai.script(*fix_average_script()[1:])  # edit, run the tests, answer
    hint = "the bug is the + 1 in average()"
    done = agent_lsp("run", "--continue", hint, "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "calc.py").read_text().count(FIX) == 1
    sent = fake_openai.requests[2]["messages"]
    earlier = [m for m in before if m["role"] != "system"]
    assert [m for m in sent if m["role"] != "system"][: len(earlier)] == earlier  # same talk
    assert sent[-1] == {"role": "user", "content": hint}  # then the hint
    again = agent_lsp("run", "--continue", "more", "--root", str(project), env=server_env)
    assert again.returncode == 2  # a completed task is not continued: said, nothing run
    assert len(fake_openai.requests) == 5


def test_run_reports_a_model_error(project: Path, server_env: dict[str, str]) -> None:
    env = {**server_env, "AGENT_LSP_BASE_URL": "http://127.0.0.1:9/v1"}
    done = agent_lsp("run", "fix it", "--root", str(project), env=env)
    assert done.returncode == 1
    assert "■ error after 1 steps: model error: cannot reach the model" in done.stdout


def test_demo_runs_the_real_pipeline_with_a_scripted_model(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    env = {k: v for k, v in server_env.items() if not k.startswith("AGENT_LSP_")}
    target = tmp_path / "demo"
    done = agent_lsp("demo", "--dir", str(target), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a SCRIPTED MODEL stands in for the LLM" in done.stdout
    assert "← run_tests: error: tests did not pass: 1 passed, 1 failed" in done.stdout
    assert "← run_tests: success: pytest: 2 passed" in done.stdout
    assert (target / "calc.py").read_text().count(FIX) == 1


def test_test_command_runs_the_project_suite(project: Path, server_env: dict[str, str]) -> None:
    done = agent_lsp("test", "--root", str(project), env=server_env)
    assert done.returncode == 1
    assert done.stdout.startswith("pytest: 1 passed, 1 failed")
    assert "FAILED tests/test_calc.py::test_average at tests/test_calc.py:9" in done.stdout


def test_a_relative_root_is_the_folder_it_names(project: Path, server_env: dict[str, str]) -> None:
    # `--root .` in the project, `--root <name>` from its parent: the same suite, the same
    # totals (a relative root was handed on as is, so the sandboxed run could not find it).
    for root, cwd in ((".", project), (project.name, project.parent)):
        done = agent_lsp("test", "--root", root, env=server_env, cwd=cwd)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stdout.startswith("pytest: 1 passed, 1 failed"), done.stdout
        assert "FAILED tests/test_calc.py::test_average at tests/test_calc.py:9" in done.stdout


def test_doctor_checks_the_endpoint(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply(tool_calls=[ToolCall("ping", {"text": "ok"})]))  # the probe
    done = agent_lsp("doctor", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"model: fake-model at {fake_openai.base_url}" in done.stdout
    assert "endpoint reachable; models: fake-model" in done.stdout
    env = {**server_env, "AGENT_LSP_BASE_URL": "http://127.0.0.1:9/v1"}
    down = agent_lsp("doctor", "--root", str(project), env=env)
    assert down.returncode == 1 and "endpoint NOT reachable" in down.stdout


def test_trust_lets_a_projects_config_apply(project: Path, server_env: dict[str, str]) -> None:
    (project / ".agent-lsp").mkdir()
    (project / ".agent-lsp" / "config.toml").write_text('[model]\nbaseUrl = "http://evil/v1"\n')
    before = agent_lsp("doctor", "--root", str(project), env=server_env)
    assert "ignored model.baseUrl" in before.stdout
    assert "http://evil/v1" not in before.stdout
    done = agent_lsp("trust", "--root", str(project), env=server_env)
    assert done.returncode == 0 and f"trusted {project.resolve()}" in done.stdout
    listed = agent_lsp("trust", "--list", env=server_env)
    assert str(project.resolve()) in listed.stdout
    env = {k: v for k, v in server_env.items() if k != "AGENT_LSP_BASE_URL"}
    after = agent_lsp("doctor", "--root", str(project), env=env)
    assert "model: fake-model at http://evil/v1" in after.stdout
    agent_lsp("trust", "--remove", "--root", str(project), env=server_env)
    again = agent_lsp("doctor", "--root", str(project), env=env)
    assert "http://evil/v1" not in again.stdout.split("warning")[0]
