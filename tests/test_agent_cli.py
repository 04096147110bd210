"""`agent-lsp run` and `agent-lsp doctor` as a user runs them against servers that behave like
real ones: a subprocess, the fake model over HTTP, real pytest."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import BUG
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_cli import agent_lsp


def test_run_stops_a_model_that_stopped_after_one_nudge(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.default_reply = Reply("I would rather not.")
    done = agent_lsp("run", "fix it", "--root", str(project), env=server_env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "■ failed after 2 steps: stopped: the model did not continue: I would rather not."
        in done.stdout
    )
    assert len([r for r in fake_openai.requests if "tools" in r or "max_tokens" in r]) == 2
    assert (project / "calc.py").read_text().count(BUG) == 1
    assert "Traceback" not in done.stderr


def test_run_without_a_test_runner_says_unverified_and_exits_3(
    tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("no tests here\n")
    fake_openai.script(Reply("All done."))
    done = agent_lsp("run", "tidy the notes", "--root", str(folder), env=server_env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert (
        "■ completed after 1 steps: unverified: no test runner found, so nothing checked the "
        "result; the model says: All done."
    ) in done.stdout


def test_doctor_probes_the_model_name_and_tool_calls(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply(tool_calls=[ToolCall("ping", {"text": "ok"})]))
    done = agent_lsp("doctor", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"model: fake-model at {fake_openai.base_url}" in out
    assert (
        "name from environment AGENT_LSP_MODEL; baseUrl from environment AGENT_LSP_BASE_URL" in out
    )
    assert "API key: set (environment AGENT_LSP_API_KEY)" in out
    assert "toolCalling: auto (default); maxTokens: 4096 (default)" in out
    assert "workspace: not trusted" in out
    assert "model 'fake-model' is served" in out
    assert "tool calls work (native; probe:" in out
    assert out.rstrip().endswith("all checks passed")
    probe = fake_openai.requests[-1]
    assert [t["function"]["name"] for t in probe["tools"]] == ["ping"]
    assert probe["max_tokens"] == 64 and probe["model"] == "fake-model"


def test_doctor_names_a_model_that_is_not_served_and_the_next_step(
    project: Path, server_env: dict[str, str]
) -> None:
    config = Path(server_env["HOME"]) / ".config" / "agent-lsp"
    config.mkdir(parents=True)
    with FakeOpenAIServer(models=["smollm2", "qwen"]) as server:
        (config / "config.toml").write_text(f'[model]\nbaseUrl = "{server.base_url}"\n')
        env = {k: v for k, v in server_env.items() if k != "AGENT_LSP_BASE_URL"}
        done = agent_lsp("doctor", "--root", str(project), env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert f"baseUrl from user config {config / 'config.toml'}" in out
    assert "model 'fake-model' is NOT served here" in out
    assert (
        "next: set [model] name (now from environment AGENT_LSP_MODEL) to one of: smollm2, qwen"
        in out
    )
    assert server.requests == []  # no chat request for a name that is not served
    assert out.rstrip().endswith("1 problem(s): see the next steps above")


def test_doctor_says_what_to_do_when_the_endpoint_is_down(
    project: Path, server_env: dict[str, str]
) -> None:
    env = {**server_env, "AGENT_LSP_BASE_URL": "http://127.0.0.1:9/v1"}
    down = agent_lsp("doctor", "--root", str(project), env=env)
    assert down.returncode == 1
    assert "endpoint NOT reachable at http://127.0.0.1:9/v1: Connection error." in down.stdout
    assert (
        "next: start the model server, or set [model] baseUrl (now from environment "
        "AGENT_LSP_BASE_URL) to where it listens"
    ) in down.stdout
    assert "Traceback" not in down.stderr


def test_doctor_says_when_the_model_answers_in_words(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Reply("ok"), Reply("ok"))
    native = agent_lsp("doctor", "--root", str(project), env=server_env)
    assert native.returncode == 0, native.stdout + native.stderr
    assert "tool calls: the model answered in words" in native.stdout
    assert "toolCalling = auto switches to text tools after its first answer in words" in (
        native.stdout
    )
    config = Path(server_env["HOME"]) / ".config" / "agent-lsp"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[model]\ntoolCalling = "native"\n')
    strict = agent_lsp("doctor", "--root", str(project), env=server_env)
    assert strict.returncode == 1
    assert "tool calls NOT made: the model answered in words" in strict.stdout
    assert 'next: set [model] toolCalling = "auto"' in strict.stdout
    assert f"toolCalling: native (user config {config / 'config.toml'})" in strict.stdout


def test_doctor_reports_the_endpoint_refusing_tools(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    from tests.fakes.openai_server import Error

    fake_openai.script(Error(400, "this model does not support tools"))
    done = agent_lsp("doctor", "--root", str(project), env=server_env)
    assert done.returncode == 1
    assert "tool-call probe FAILED: the model endpoint answered HTTP 400" in done.stdout
    assert 'next: set [model] toolCalling = "text" (the endpoint refuses tools)' in done.stdout


SERVING = (
    "next: serve the model with a larger window and its own chat template: python -m "
    "llama_cpp.server --model FILE --n_ctx 16384 (no --chat_format: chatml-function-calling "
    "HTML-escapes the prompt)"
)


def test_doctor_says_when_the_first_request_does_not_fit_the_servers_window(
    project: Path, server_env: dict[str, str]
) -> None:
    # llama-cpp-python without --n_ctx: 2048 tokens, said nowhere but in the 400 of a request
    # that does not fit; no streaming with tools (chatml-function-calling); usage only whole.
    with FakeOpenAIServer(
        context_window=2048, broken_tool_streams="request", stream_usage=False
    ) as server:
        server.script(Reply(tool_calls=[ToolCall("ping", {"text": "ok"})]))
        env = {**server_env, "AGENT_LSP_BASE_URL": server.base_url}
        done = agent_lsp("doctor", "--root", str(project), env=env)
        out = done.stdout
        assert done.returncode == 1, out + done.stderr
        assert "context window: 2048 tokens (learned from the server's context-length error)" in (
            out
        )
        line = next(x for x in out.splitlines() if "first request:" in x)
        assert line.startswith("  first request: ~")
        assert line.endswith(
            "(estimated) tokens with 14 tools, of 2048: it does NOT fit; every task would fail "
            "at once"
        )
        assert SERVING in out
        assert (
            "streaming: the server cannot stream replies with tools offered (found now): they "
            "are asked for whole, without a failed stream first"
        ) in out
        assert "tool calls work (native; probe:" in out
        assert out.rstrip().endswith("1 problem(s): see the next steps above")
        # The next doctor (and run) knows both without paying for them again.
        server.script(Reply(tool_calls=[ToolCall("ping", {"text": "ok"})]))
        before = len(server.requests)
        again = agent_lsp("doctor", "--root", str(project), env=env)
        assert "context window: 2048 tokens (learned from" in again.stdout
        assert "cannot stream replies with tools offered (remembered from an earlier run)" in (
            again.stdout
        )
        assert [r.get("stream", False) for r in server.requests[before:]] == [False]
    assert not (project / ".agent-lsp").exists()  # doctor leaves the project as it was


def test_doctor_reads_llama_servers_window_and_its_tokenizer_count(
    project: Path, server_env: dict[str, str]
) -> None:
    props = {"default_generation_settings": {"n_ctx": 16384}}
    with FakeOpenAIServer(
        props=props, context_window=16384, tokenizer="llama.cpp", stream_usage=False
    ) as server:
        server.script(Reply(tool_calls=[ToolCall("ping", {"text": "ok"})]))
        env = {**server_env, "AGENT_LSP_BASE_URL": server.base_url}
        done = agent_lsp("doctor", "--root", str(project), env=env)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "context window: 16384 tokens (llama.cpp /props)" in out
    assert re.search(r"tool calls work \(native; probe: ~\d+ in, ~\d+ out \(estimated\)\)", out)
    line = next(x for x in out.splitlines() if "first request:" in x)
    assert line.endswith("(counted by the server's tokenizer) tokens with 14 tools, of 16384: fits")
    assert "streaming:" not in out
    assert out.rstrip().endswith("all checks passed")
    assert ("POST", "/tokenize") in [(m, p) for m, p, _ in server.other_requests]
    assert not [r for r in server.requests if len(json.dumps(r)) > 100_000]  # nothing oversized


def test_doctor_says_when_the_server_escapes_the_prompt(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    # llama-cpp-python's chatml-function-calling renders the prompt HTML-escaped; the model
    # answers in kind.
    fake_openai.script(
        Reply(
            "&lt;tool_call&gt;{&#34;name&#34;: &#34;ping&#34;, &#34;arguments&#34;: "
            "{&#34;text&#34;: &#34;ok&#34;}}&lt;/tool_call&gt;"
        )
    )
    done = agent_lsp("doctor", "--root", str(project), env=server_env)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "tool calls work (native; probe:" in out
    assert (
        "the reply was HTML-escaped (&lt; &#34;): the server escapes the prompt, as "
        "llama-cpp-python's --chat_format chatml-function-calling does"
    ) in out
    assert SERVING in out


def test_doctor_tells_a_call_that_cannot_run_from_words(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    # What Qwen2.5-Coder-1.5B answered the probe under llama-cpp-python, its own template.
    fake_openai.script(Reply('```json\n{\n  "name": "ping",\n  "arguments": {}\n}\n```'))
    done = agent_lsp("doctor", "--root", str(project), env=server_env)
    assert (
        "the probe's reply was a tool call written as text that cannot run: ping needs the "
        'argument(s) text. Write each tool call as <tool_call>{"name": "<tool name>", '
        '"arguments": {<arguments as JSON>}}</tool_call>'
    ) in done.stdout
