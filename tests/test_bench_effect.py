"""The effectiveness benchmark's own judging (bench/effect): tasks are read strictly, a run is
judged from outside (the tests pass in a fresh copy, no test file changed), failures are named
in a fixed order, the harnesses' endings are read from what they leave, and the counting proxy
counts what passes through it (usage when the server sends it, a marked estimate when not)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from openai import APIConnectionError, APIError, OpenAI

from bench.effect.harnesses import (
    OUTCOME,
    agent_lsp_end,
    agent_lsp_malformed,
    aider_end,
    aider_tokens,
    mini_end,
)
from bench.effect.proxy import CountingProxy
from bench.effect.report import RunRecord, failure_kind, harness_table, summarize
from bench.effect.run import MARKER, Restarter, stop_server, write_report
from bench.effect.tasks import (
    TASKS,
    Task,
    TaskError,
    Toolchain,
    changes,
    check_task,
    copy_project,
    is_protected,
    judge,
    load_task,
    load_tasks,
    snapshot,
)
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall

SLUG = "def slug(s):\n    return s.replace(' ', '-')\n"
SLUG_FIXED = "def slug(s):\n    return s.replace(' ', '-').lower()\n"
SLUG_TEST = "from slug import slug\n\n\ndef test_slug():\n    assert slug('A b') == 'a-b'\n"


def make_task(root: Path, name: str = "t-slug", overrides: dict[str, object] | None = None) -> Path:
    folder = root / name
    (folder / "project").mkdir(parents=True)
    (folder / "project" / "slug.py").write_text(SLUG)
    (folder / "project" / "test_slug.py").write_text(SLUG_TEST)
    data: dict[str, object] = {
        "title": "slug",
        "kind": "bug from a failing test",
        "runner": "pytest",
        "task": "make the test pass",
        "files": ["slug.py"],
        "tests": ["test_slug.py"],
        "diagnostic": {
            "file": "test_slug.py",
            "line": 5,
            "message": "assert 'A-b' == 'a-b'",
            "source": "pytest",
        },
    }
    data.update(overrides or {})
    (folder / "task.json").write_text(json.dumps(data))
    return folder


@pytest.fixture
def tools(tmp_path: Path) -> Toolchain:
    return Toolchain(sys.executable, tmp_path / "cache")


def test_every_shipped_task_loads_and_has_a_reference_fix() -> None:
    tasks = load_tasks()
    assert len(tasks) >= 15
    runners = {t.runner for t in tasks}
    assert runners == {"pytest", "unittest", "jest", "vitest", "go"}
    kinds = {t.kind for t in tasks}
    assert kinds == {
        "bug from a failing test",
        "fix from a diagnostic",
        "feature from its tests",
        "two-file fix",
    }
    for task in tasks:
        reference = TASKS.parent / "reference" / task.name
        assert reference.is_dir() and any(reference.iterdir()), task.name
        # The reference fix never travels with the task: a harness's copy cannot see it.
        assert not (task.folder / "reference").exists()
        assert all(not is_protected(p.name) for p in reference.iterdir()), task.name
        assert set(task.tests) <= {p for p in task.tests if is_protected(p)}, task.name


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"runner": "nose"}, "runner 'nose' is not one of"),
        ({"kind": "refactor"}, "kind 'refactor' is not one of"),
        ({"files": ["missing.py"]}, "missing.py is not a file of project/"),
        ({"tests": []}, "'tests' must be a non-empty list"),
        ({"task": ""}, "'task' must be a non-empty string"),
        (
            {"diagnostic": {"file": "slug.py", "line": 9, "message": "m", "source": "s"}},
            "the diagnostic's slug.py:9 is not a line of project/",
        ),
    ],
)
def test_a_malformed_task_is_refused_in_one_line(
    tmp_path: Path, overrides: dict[str, object], message: str
) -> None:
    folder = make_task(tmp_path, overrides=overrides)
    with pytest.raises(TaskError, match=r"^t-slug/task\.json: ") as caught:
        load_task(folder)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unknown_task_name_is_named(tmp_path: Path) -> None:
    make_task(tmp_path)
    with pytest.raises(TaskError, match="no such task: nope \\(have: t-slug\\)"):
        load_tasks(tmp_path, ["nope"])


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("test_slug.py", True),
        ("pkg/slug_test.py", True),
        ("conftest.py", True),
        ("package.json", True),
        ("go.mod", True),
        ("grades_test.go", True),
        ("cart.test.js", True),
        ("src/range.spec.ts", True),
        ("src/__tests__/a.js", True),
        ("vitest.config.ts", True),
        ("slug.py", False),
        ("testing_utils.py", False),
        ("cart.js", False),
        ("grades.go", False),
        ("latest.js", False),
    ],
)
def test_protected_files(path: str, protected: bool) -> None:
    assert is_protected(path) is protected


def test_changes_split_sources_from_protected_files() -> None:
    before = {"a.py": "1", "test_a.py": "2", "gone.py": "3"}
    after = {"a.py": "1x", "test_a.py": "2", "new.py": "4", "test_new.py": "5"}
    found = changes(before, after)
    assert found.sources == ("a.py", "gone.py", "new.py")
    assert found.protected == ("test_new.py",)


def test_the_snapshot_leaves_out_dependencies_caches_and_harness_folders(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x")
    for folder in ("node_modules", ".git", "__pycache__", ".agent-lsp", ".aider.tags.cache.v4"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "f").write_text("y")
    (tmp_path / ".aider.chat.history.md").write_text("z")
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    assert list(snapshot(tmp_path)) == ["a.py"]


def _task_and_copy(tmp_path: Path, tools: Toolchain) -> tuple[Task, Path, dict[str, str]]:
    task = load_task(make_task(tmp_path / "tasks"))
    work = copy_project(task, tmp_path / "work", tools)
    return task, work, snapshot(work)


def test_judge_solved_when_the_tests_pass_in_a_fresh_copy(tmp_path: Path, tools: Toolchain) -> None:
    task, work, before = _task_and_copy(tmp_path, tools)
    (work / "slug.py").write_text(SLUG_FIXED)
    (work / ".agent-lsp").mkdir()
    (work / ".agent-lsp" / "slug.py").write_text("raise SystemExit(1)\n")  # not the project's
    verdict = judge(task, work, before, tools, tmp_path / "judge")
    assert verdict.solved, verdict.tests.output
    assert verdict.why == "solved"
    assert verdict.changes.sources == ("slug.py",)
    assert not (tmp_path / "judge" / ".agent-lsp").exists()


def test_judge_no_edit_and_wrong_edit(tmp_path: Path, tools: Toolchain) -> None:
    task, work, before = _task_and_copy(tmp_path, tools)
    untouched = judge(task, work, before, tools, tmp_path / "judge1")
    assert (untouched.solved, untouched.why) == (False, "no edit")
    assert untouched.tests.exit_code == 1 and "1 failed" in untouched.tests.output
    (work / "slug.py").write_text(SLUG.replace("'-'", "'_'"))
    wrong = judge(task, work, before, tools, tmp_path / "judge2")
    assert (wrong.solved, wrong.why) == (False, "tests fail")


def test_judge_refuses_a_run_that_edited_the_tests_even_when_they_pass(
    tmp_path: Path, tools: Toolchain
) -> None:
    task, work, before = _task_and_copy(tmp_path, tools)
    (work / "test_slug.py").write_text(SLUG_TEST.replace("'a-b'", "'A-b'"))
    verdict = judge(task, work, before, tools, tmp_path / "judge")
    assert verdict.tests.passed  # the edited test passes ...
    assert not verdict.solved  # ... and the run does not count
    assert verdict.why == "tests changed: test_slug.py"


def test_judge_refuses_an_added_conftest_that_skips_everything(
    tmp_path: Path, tools: Toolchain
) -> None:
    task, work, before = _task_and_copy(tmp_path, tools)
    (work / "conftest.py").write_text(
        "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n        item.add_marker(pytest.mark.skip)\n"
    )
    verdict = judge(task, work, before, tools, tmp_path / "judge")
    assert not verdict.solved
    assert verdict.changes.protected == ("conftest.py",)


def test_check_task_proves_a_shipped_task(tools: Toolchain, tmp_path: Path) -> None:
    (task,) = load_tasks(names=["py-slug"])
    result = check_task(task, tools, tmp_path)
    assert result.ok, result.problem
    assert (result.failing_before, result.passing_after) == (True, True)


def test_check_task_finds_a_task_that_already_passes_or_a_fix_that_does_not(
    tmp_path: Path, tools: Toolchain, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks, reference = tmp_path / "tasks", tmp_path / "reference"
    monkeypatch.setattr("bench.effect.tasks.REFERENCE", reference)
    passing = load_task(make_task(tasks, "passing"))
    (passing.project / "slug.py").write_text(SLUG_FIXED)
    (reference / "passing").mkdir(parents=True)
    (reference / "passing" / "slug.py").write_text(SLUG_FIXED)
    assert check_task(passing, tools, tmp_path / "c1").problem == "the tests pass before the fix"
    broken = load_task(make_task(tasks, "broken"))
    (reference / "broken").mkdir(parents=True)
    (reference / "broken" / "slug.py").write_text(SLUG)
    result = check_task(broken, tools, tmp_path / "c2")
    assert not result.ok and "does not solve it" in result.problem
    cheating = load_task(make_task(tasks, "cheating"))
    (reference / "cheating").mkdir(parents=True)
    (reference / "cheating" / "test_slug.py").write_text("def test_nothing():\n    pass\n")
    assert "the reference changes tests" in check_task(cheating, tools, tmp_path / "c3").problem
    missing = load_task(make_task(tasks, "missing"))
    assert "no reference fix" in check_task(missing, tools, tmp_path / "c4").problem


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((True, False, True, "claimed done", 0), None),
        ((True, True, True, "claimed done", 0), "tests changed"),
        ((False, True, True, "timeout", 0), "tests changed"),
        ((False, False, True, "timeout", 3), "timeout"),
        ((False, False, False, "error", 0), "error"),
        ((False, False, True, "loop", 0), "loop"),
        ((False, False, True, "budget", 2), "budget"),
        ((False, False, False, "budget", 2), "malformed"),
        ((False, False, False, "malformed", 0), "malformed"),
        ((False, False, False, "claimed done", 1), "malformed"),
        ((False, False, False, "exited", 0), "no edit"),
        ((False, False, False, "budget", 0), "budget"),
        ((False, False, True, "claimed done", 1), "wrong edit"),
        ((False, False, True, "gave up", 0), "wrong edit"),
    ],
)
def test_failure_kind(args: tuple[bool, bool, bool, str, int], expected: str | None) -> None:
    assert failure_kind(*args) == expected


def _record(harness: str, task: str, solved: bool, tokens: int, failure: str | None) -> RunRecord:
    return RunRecord(
        harness=harness,
        task=task,
        repeat=1,
        solved=solved,
        failure=failure,
        ended="claimed done",
        detail="",
        exit_code=0,
        malformed=0,
        steps=None,
        calls=2,
        prompt_tokens=tokens,
        completion_tokens=10,
        estimated=harness == "b",
        seconds=5.0,
    )


def test_summary_and_table() -> None:
    records = [
        _record("a", "t1", True, 100, None),
        _record("a", "t2", False, 300, "no edit"),
        _record("b", "t1", False, 50, "wrong edit"),
        _record("b", "t2", False, 70, "wrong edit"),
    ]
    a, b = summarize(records)
    assert (a.solved, a.runs, a.prompt_per_run, a.tokens_per_solved) == (1, 2, 200, 420)
    assert (b.solved, b.tokens_per_solved, b.failures) == (0, None, {"wrong edit": 2})
    table = harness_table([a, b]).splitlines()
    assert table[2] == "| a | 1 / 2 | 200 | 10 | 420 | 2 | 5 | no edit 1 |"
    assert table[3] == "| b | 0 / 2 | ~60 | ~10 | - | 2 | 5 | wrong edit 2 |"


def test_a_report_keeps_the_earlier_runs_below_the_new_one(tmp_path: Path) -> None:
    """Each run's section goes first below the marker; the sections of earlier runs (and the
    text above the marker) stay as they were (the writer used to drop every earlier run)."""
    report = tmp_path / "effect.md"
    report.write_text(f"# Effect\n\nHow it runs.\n\n{MARKER}\n\n## An earlier run\n\nIts table.\n")
    env: dict[str, object] = {
        "load": (1.0, 1.0, 1.0),
        "date": "2026-12-06 21:00 UTC",
        "commit": "abc1234",
        "cpus": 2,
        "timeout": 300.0,
        "repeat": 1,
        "server": "llama",
        "peers": {"aider": "aider-chat==0.86.2"},
    }
    write_report(report, [_record("a", "t1", True, 100, None)], env, "run.sh", "first")
    write_report(report, [_record("a", "t1", False, 100, "no edit")], env, "run.sh", "second")
    text = report.read_text()
    assert text.startswith(f"# Effect\n\nHow it runs.\n\n{MARKER}\n\n## Results: second\n")
    assert text.count(MARKER) == 1
    second, first, earlier = (
        text.index("## Results: second"),
        text.index("## Results: first"),
        text.index("## An earlier run\n\nIts table.\n"),
    )
    assert second < first < earlier
    assert "- a / t1: **no edit**" in text[second:first]


def test_agent_lsp_endings() -> None:
    line = "■ failed after 25 steps: stopped: max steps (25) reached"
    found = OUTCOME.search(line)
    assert found is not None and found[1] == "failed" and found[2] == "25"
    assert agent_lsp_end("failed", found[3]) == "budget"
    assert agent_lsp_end("completed", "done: tests pass") == "claimed done"
    assert agent_lsp_end("paused", "paused: the same call 3 times (loop)") == "loop"
    assert agent_lsp_end("error", "model error: 500") == "error"
    assert agent_lsp_end("failed", "the model stopped without a fix") == "gave up"


def test_agent_lsp_malformed_calls_come_from_its_session_log(tmp_path: Path) -> None:
    logs = tmp_path / ".agent-lsp" / "logs"
    logs.mkdir(parents=True)
    entries = [
        {"kind": "tool_call", "tool": "edit", "error": "unknown tool 'edit'; available: ..."},
        {
            "kind": "tool_call",
            "tool": "read_file",
            "error": "arguments for read_file are not valid JSON: x",
        },
        {
            "kind": "tool_call",
            "tool": "read_file",
            "error": "invalid arguments for read_file: path",
        },
        {"kind": "tool_call", "tool": "run_tests", "error": "1 failed"},
        {"kind": "model_call", "error": "unknown tool"},
    ]
    (logs / "s.jsonl").write_text("\n".join(json.dumps(e) for e in entries) + "\nnot json\n")
    assert agent_lsp_malformed(tmp_path) == 3


def test_mini_swe_agent_endings_from_its_trajectory(tmp_path: Path) -> None:
    trajectory = tmp_path / "t.json"
    assert mini_end(trajectory) == ("error", "no trajectory", 0, None)
    trajectory.write_text(
        json.dumps(
            {
                "info": {"exit_status": "RepeatedFormatError", "model_stats": {"api_calls": 4}},
                "messages": [
                    {"role": "system", "content": "Format error: you"},
                    {"role": "user", "content": "Format error:\nPlease always provide one action"},
                    {"role": "tool", "content": [{"type": "text", "text": "Tool call error: x"}]},
                    {"role": "assistant", "content": "Format error: (the model's own words)"},
                ],
            }
        )
    )
    assert mini_end(trajectory) == ("malformed", "RepeatedFormatError", 2, 4)
    trajectory.write_text(json.dumps({"info": {"exit_status": "Submitted"}, "messages": []}))
    assert mini_end(trajectory)[0] == "claimed done"
    trajectory.write_text(json.dumps({"info": {"exit_status": "LimitsExceeded"}}))
    assert mini_end(trajectory)[0] == "budget"


def test_aider_endings_from_its_output() -> None:
    assert aider_end("Applied edit to slug.py\n", 0) == ("exited", 0)
    output = "The LLM did not conform to the edit format.\nOnly 3 reflections allowed, stopping.\n"
    assert aider_end(output, 0) == ("budget", 1)
    assert aider_end("", None) == ("timeout", 0)
    assert aider_end("Traceback", 1) == ("error", 0)
    output = "Tokens: 845 sent, 9 received.\nApplied edit\nTokens: 2.5k sent, 120 received.\n"
    assert aider_tokens(output) == (3345, 129)


def test_the_proxy_counts_usage_and_marks_estimates() -> None:
    with FakeOpenAIServer(stream_usage=False) as fake:
        proxy = CountingProxy(fake.base_url)
        proxy.start()
        try:
            client = OpenAI(api_key="x", base_url=proxy.base_url, max_retries=0)
            fake.script(
                Reply("plain", usage=(1234, 56)),
                Reply(tool_calls=[ToolCall("read_file", {"path": "slug.py"})]),
            )
            proxy.label = "h/t/1"
            plain = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
            assert plain.choices[0].message.content == "plain"  # passed through unchanged
            stream = client.chat.completions.create(
                model="m",
                messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "go"}],
                tools=[{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
                stream=True,
            )
            arguments = "".join(
                call.function.arguments or ""
                for c in stream
                for call in (c.choices[0].delta.tool_calls or [] if c.choices else [])
                if call.function is not None
            )
            assert json.loads(arguments) == {"path": "slug.py"}
            first, second = proxy.take()
            assert proxy.take() == []
        finally:
            proxy.stop()
    assert (first.label, first.stream, first.prompt_tokens, first.completion_tokens) == (
        "h/t/1",
        False,
        1234,
        56,
    )
    assert not first.estimated and first.reply == "plain"
    # No tokenizer behind the fake: a quarter of the text's length, plus the template's share.
    assert second.stream and second.estimated and second.tool_calls == 1
    assert second.messages == 2 and second.finish_reason == "tool_calls"
    assert second.prompt_tokens > 2 * 5 and second.completion_tokens > 0
    assert len(fake.requests) == 2 and fake.requests[1]["stream"] is True


def test_node_and_go_tasks_name_their_runner() -> None:
    names = {t.name: t for t in load_tasks()}
    assert names["js-jest-title"].language == "javascript"
    assert names["go-average"].language == "go"
    assert names["py-slug"].language == "python"
    # Every JS task pins the same runner version the cached node_modules installs.
    from bench.effect.install import NODE_PACKAGES

    for task in names.values():
        if task.runner in NODE_PACKAGES:
            manifest = json.loads((task.project / "package.json").read_text())
            assert manifest["devDependencies"] == NODE_PACKAGES[task.runner], task.name


def test_copies_carry_no_reference_and_no_caches(tmp_path: Path, tools: Toolchain) -> None:
    (task,) = load_tasks(names=["py-temperature"])
    shutil.copytree(task.project, tmp_path / "src")
    (tmp_path / "src" / "__pycache__").mkdir()
    work = copy_project(task, tmp_path / "work", tools, source=tmp_path / "src")
    assert sorted(p.name for p in work.iterdir()) == ["report.py", "test_weather.py", "units.py"]


def test_the_proxy_waits_for_a_request_a_killed_run_left_and_keeps_its_label() -> None:
    """A harness killed at its limit leaves its request to the server: the next run must not
    start behind it, and its tokens belong to the run that asked."""
    with FakeOpenAIServer() as fake:
        proxy = CountingProxy(fake.base_url)
        proxy.start()
        try:
            fake.script(Hang(3.0), Reply("late", usage=(700, 7)))
            client = OpenAI(api_key="x", base_url=proxy.base_url, max_retries=0)
            proxy.label = "killed/t/1"
            asking = threading.Thread(
                target=lambda: client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
            )
            asking.start()
            while not fake.requests:  # the request reached the server
                threading.Event().wait(0.05)
            assert proxy.wait_idle(0.2) is False  # still computing
            proxy.label = "next/t/1"
            assert proxy.wait_idle(60) is True
            asking.join(60)
            (call,) = proxy.take()
        finally:
            proxy.stop()
    assert (call.label, call.prompt_tokens, call.completion_tokens) == ("killed/t/1", 700, 7)


def test_a_request_its_harness_left_is_cut_and_still_counted() -> None:
    """aider left a request in flight as it ended, and the next run waited up to 900 s behind
    it: `abort` cuts the requests of the ended run at the server's side at once, counts what
    they cost so far under their own label, and leaves another run's request alone."""
    with FakeOpenAIServer() as fake:
        proxy = CountingProxy(fake.base_url)
        proxy.start()
        try:
            fake.script(Hang(300.0), Reply("never read"))
            client = OpenAI(api_key="x", base_url=proxy.base_url, max_retries=0, timeout=600)
            proxy.label = "aider/t/1"

            def ask() -> None:
                with contextlib.suppress(APIError):  # the reply is cut (a 502, or a hang-up)
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": "fix it " * 40}]
                    )

            asking = threading.Thread(target=ask, daemon=True)
            asking.start()
            while not fake.requests:  # the request reached the server
                threading.Event().wait(0.05)
            assert proxy.abort("other/t/1") == 0  # another run's requests are not touched
            assert proxy.wait_idle(0.2) is False
            assert proxy.abort("aider/t/1") == 1
            assert proxy.wait_idle(60) is True  # not the 300 s the server would take
            (call,) = proxy.take()
        finally:
            proxy.stop()
    assert (call.label, call.status, call.estimated) == ("aider/t/1", 499, True)
    assert call.prompt_tokens > 40  # the prompt was sent: it is counted (estimated)
    assert call.completion_tokens == 0


def test_settle_returns_once_the_server_answers_and_counts_nothing() -> None:
    """After a cut, the bench waits for the server to be free before the next run (it may
    still compute the cut request): a one-token request of its own, answered after what the
    server still computes, never counted as a run's call."""
    with FakeOpenAIServer() as fake:
        proxy = CountingProxy(fake.base_url)
        proxy.start()
        try:
            fake.script(Hang(1.0), Reply("1"))  # busy for a while, then free
            assert proxy.settle("m", 60) is True
            (probe,) = fake.requests
            assert (probe["model"], probe["max_tokens"]) == ("m", 1)
            assert proxy.take() == []
            fake.script(Hang(30.0), Reply("late"))
            assert proxy.settle("m", 0.5) is False  # no answer in time: said, not hung
        finally:
            proxy.stop()


def _alive_in_group(group: int) -> list[int]:
    """The processes of process group `group` still running (zombies, dead but not yet
    reaped by whoever adopted them, are not)."""
    alive: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


def test_a_restart_stops_the_busy_server_s_whole_group_and_starts_another() -> None:
    """A server still computing a cut request after a minute is started again: the old one's
    process group is gone (its worker too), the new one is the one kept."""
    import subprocess

    def start() -> subprocess.Popen[bytes]:
        # a server with a worker of its own, as llama-cpp-python's uvicorn may have
        return subprocess.Popen(
            ["sh", "-c", "sleep 300 & wait"], start_new_session=True, stdin=subprocess.DEVNULL
        )

    first = start()
    restart = Restarter(first, start)
    try:
        restart()
        assert first.poll() is not None  # stopped
        deadline = time.monotonic() + 30  # its worker, signalled too, may take a moment
        while _alive_in_group(first.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive_in_group(first.pid) == []  # nothing of its group is left running
        assert restart.proc is not first and restart.proc.poll() is None
    finally:
        stop_server(restart.proc)
    assert restart.proc.poll() is not None


def test_a_server_that_dies_mid_reply_cuts_the_reply_and_prints_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The model server died in a streamed reply (a build its CPU could not run): the harness
    sees the reply cut, the bench's output no traceback, and the call is still counted."""
    import socket

    upstream = socket.create_server(("127.0.0.1", 0))
    port = upstream.getsockname()[1]

    def die_mid_reply() -> None:
        conn, _ = upstream.accept()
        upstream.close()  # dead: nothing answers any more (its tokenizer neither)
        with conn:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
                b'2a\r\ndata: {"choices":[{"delta":{"content":"hel"}}]}\n\n\r\n'
            )

    serving = threading.Thread(target=die_mid_reply)
    serving.start()
    proxy = CountingProxy(f"http://127.0.0.1:{port}/v1")
    proxy.start()
    try:
        client = OpenAI(api_key="x", base_url=proxy.base_url, max_retries=0)
        proxy.label = "h/t/1"
        with pytest.raises(APIConnectionError):
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            for _ in stream:
                pass
        assert proxy.wait_idle(30) is True
        (call,) = proxy.take()
    finally:
        proxy.stop()
        serving.join(10)
    assert call.label == "h/t/1" and call.stream
    err = capsys.readouterr().err
    assert "Traceback" not in err, err


def test_repeated_runs_say_each_rounds_solved_count_and_their_median() -> None:
    """Three rounds of two tasks, the third stopped after its first task: the rounds that ran
    every task are counted (2 and 1 solved), the stopped one is not (its 1 of 1 is no score)."""

    def run(task: str, repeat: int, solved: bool) -> RunRecord:
        return replace(
            _record("a", task, solved, 100, None if solved else "wrong edit"), repeat=repeat
        )

    records = [
        run("t1", 1, True),
        run("t2", 1, True),
        run("t1", 2, False),
        run("t2", 2, True),
        run("t1", 3, True),
    ]
    (a,) = summarize(records)
    assert (a.solved, a.runs, a.rounds) == (4, 5, [2, 1])
    row = harness_table([a]).splitlines()[2]
    assert row.startswith("| a | 4 / 5 (1.7 of 2 tasks); by round 2, 1, median 1.5 | ")
    (single,) = summarize(records[:2])
    assert harness_table([single]).splitlines()[2].startswith("| a | 2 / 2 | ")
