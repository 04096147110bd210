"""`tests.args` set by an improvement ("always pass -p no:randomly"): the self-check dry-runs the
tests with the arguments, the next task's `run_tests` (the real openai client against the
scripted fake model, real pytest) runs pytest with them, and an argument pytest refuses rolls
the improvement back with every file as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_lsp.config.settings import load_settings
from agent_lsp.improve import ImprovementError, ImprovementPatch, apply_improvement
from agent_lsp.models.openai_compat import OpenAICompatModel
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.improve.test_cli import snapshot, tool_results

SEES_ARGS = """\
import sys


def test_sees_the_extra_arguments():
    assert "no:randomly" in sys.argv, sys.argv
"""
ARGS = ["-p", "no:randomly"]


async def test_an_improvement_sets_tests_args_and_the_next_run_passes_them(
    project: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    calc = project / "calc.py"
    calc.write_text(calc.read_text().replace(BUG, FIX))  # a passing suite: one run per check
    (project / "tests" / "test_args.py").write_text(SEES_ARGS)
    user_config = tmp_path / "user-config.toml"
    environ = {
        "AGENT_LSP_BASE_URL": fake_openai.base_url,
        "AGENT_LSP_API_KEY": "test-key",
        "AGENT_LSP_MODEL": "fake-model",
    }

    async def improve(args: list[str]) -> list[str]:
        patch = ImprovementPatch.model_validate(
            {"summary": "args", "config": [{"key": "tests.args", "value": args}]}
        )
        now = load_settings(project, environ=environ, user_config=user_config, trusted=True)
        record = await apply_improvement(
            project, patch, "r", now.settings, trusted=True, user_config=user_config
        )
        return record.checked

    checked = await improve(ARGS)
    # the dry run ran the suite with the arguments: the test that needs them passed (without
    # them it fails)
    assert checked[-1].startswith("dry run of the tests (pytest): 3 passed, 0 failed"), checked
    config = (project / ".agent-lsp" / "config.toml").read_text()
    assert f"args = {json.dumps(ARGS)}" in config

    # the next task's run_tests: pytest with the arguments
    loaded = load_settings(project, environ=environ, user_config=user_config, trusted=True)
    assert loaded.settings.tests.args == ARGS
    session = Session(project, loaded.settings, OpenAICompatModel(loaded.settings.model))
    session.settings.max_steps = 2
    fake_openai.script(Reply(tool_calls=[ToolCall("run_tests", {})]), Reply("Ran them."))
    fake_openai.default_reply = Reply("done.")
    try:
        await session.run_task(
            Task(kind=TaskKind.TASK, instruction="run the tests"), RecordingChannel()
        )
    finally:
        await session.aclose()
    [result] = tool_results(fake_openai.requests[1])
    assert '"status":"success"' in result and "pytest: 3 passed, 0 failed" in result, result

    # a bad argument: the dry run runs no test, the improvement is rolled back byte for byte
    before = snapshot(project)
    with pytest.raises(ImprovementError) as err:
        await improve(["-m", "(("])  # allowed, and pytest refuses the expression
    assert str(err.value).startswith("rolled back, nothing changed: the dry run of the tests")
    assert snapshot(project) == before
