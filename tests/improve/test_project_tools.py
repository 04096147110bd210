"""Project tools (`.agent-lsp/tools.toml`): the model (the real openai client against the
scripted fake server) sees a typed tool and calls it; the policy asks before anything runs; the
values are whole argv elements (no shell: `; rm -rf` and `$(…)` stay text); a bad type or a path
outside the project is an error result; an untrusted repository's tools are not offered."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from agent_lsp.config.settings import load_settings
from agent_lsp.config.trust import TrustStore
from agent_lsp.improve import Improvement, ImprovementError, ImprovementPatch, apply_improvement
from agent_lsp.session import Session
from agent_lsp.task import Task, TaskKind
from agent_lsp.tools import RESERVED_NAMES, read_project_tools
from agent_lsp.tools.project_spec import ProjectToolsError, parse_project_tools
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_agent import make_session

WRITE = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(sys.argv[2] * int(sys.argv[3]))"
TOOLS_TOML = f"""\
# the project's own tools
[tools.write_note]
description = "Write a note into a file of the project"
command = ["python3", "-c", {json.dumps(WRITE)}, "{{path}}", "{{text}}", "{{times}}"]
timeout = 30

[tools.write_note.args.path]
type = "path"
required = true
description = "Where"

[tools.write_note.args.text]
type = "string"
required = true

[tools.write_note.args.times]
type = "integer"
required = true
"""
EVIL = "hi; rm -rf . $(touch pwned) `touch pwned2`"


class WatchingChannel(RecordingChannel):
    """Records, at each question, whether the tool's file already existed."""

    def __init__(self, watched: Path) -> None:
        super().__init__()
        self.watched = watched
        self.existed_at_question: list[bool] = []

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        self.existed_at_question.append(self.watched.exists())
        return await super().ask(question, options)


@pytest.fixture
def tooled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "proj"
    (root / ".agent-lsp").mkdir(parents=True)
    (root / "README.md").write_text("a project\n")
    (root / ".agent-lsp" / "tools.toml").write_text(TOOLS_TOML)
    return root


def trust(root: Path, home: Path) -> None:
    TrustStore(home / ".config" / "agent-lsp" / "trusted.toml").trust(root)


async def run(session: Session, channel: RecordingChannel) -> None:
    task = Task(kind=TaskKind.TASK, instruction="write the note")
    try:
        await session.run_task(task, channel)
    finally:
        await session.aclose()


async def test_the_model_calls_a_typed_project_tool_under_the_policy(
    tooled: Path, tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    trust(tooled, tmp_path / "home")
    fake_openai.script(
        Reply(tool_calls=[ToolCall("write_note", {"path": "notes/a.txt", "text": EVIL})]),
        Reply(tool_calls=[ToolCall("write_note", {"path": "x", "text": "t", "times": "many"})]),
        Reply(tool_calls=[ToolCall("write_note", {"path": "../out.txt", "text": "t", "times": 1})]),
        Reply(tool_calls=[ToolCall("write_note", {"path": "a.txt", "text": EVIL, "times": 2})]),
        Reply("Written."),
    )
    fake_openai.default_reply = Reply("Written.")
    target = tooled / "a.txt"
    channel = WatchingChannel(target)
    channel.answers = ["Allow once"]
    # the tool timeout is not a project tool's limit (it asks, then runs with its own timeout)
    await run(make_session(tooled, fake_openai.base_url, maxSteps=8, toolTimeout=0.01), channel)

    tools = {t["function"]["name"]: t["function"] for t in fake_openai.requests[0]["tools"]}
    schema = tools["write_note"]["parameters"]
    assert schema["required"] == ["path", "text", "times"]
    assert {k: v["type"] for k, v in schema["properties"].items()} == {
        "path": "string",
        "text": "string",
        "times": "integer",
    }
    assert tools["write_note"]["description"].startswith("Write a note into a file")
    results = [m["content"] for m in fake_openai.requests[4]["messages"] if m["role"] == "tool"]
    assert "times" in results[0] and '"status":"error"' in results[0]  # required, missing
    assert "times" in results[1] and '"status":"error"' in results[1]  # not an integer
    assert "outside the workspace" in results[2]
    assert '"status":"success"' in results[3], results[3]
    # asked once, for the whole argv, before it ran; the values stayed single arguments
    [question] = channel.questions
    assert question.startswith("agent-lsp wants to run: python3 -c ")
    assert f" a.txt '{EVIL}' 2 — exec: python runs inline code" in question
    assert channel.existed_at_question == [False]
    assert target.read_text() == EVIL * 2
    assert not (tooled / "pwned").exists() and not (tooled / "pwned2").exists()
    assert not (tmp_path / "out.txt").exists()
    assert (tooled / "README.md").read_text() == "a project\n"


async def test_an_untrusted_repository_s_tools_are_not_offered(
    tooled: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.default_reply = Reply("Nothing to do.")
    channel = RecordingChannel()
    await run(make_session(tooled, fake_openai.base_url, maxSteps=1), channel)
    names = [t["function"]["name"] for t in fake_openai.requests[0]["tools"]]
    assert "write_note" not in names and "run_command" in names
    said = [e.message for e in channel.events]
    assert any("tools.toml) are not used until you trust this workspace" in m for m in said)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[tools.run_command]\ndescription = "x"\ncommand = ["ls"]\n', "agent-lsp's own tools"),
        ('[tools.t]\ndescription = "x"\ncommand = ["{p}"]\n[tools.t.args.p]\n', "is fixed"),
        ('[tools.t]\ndescription = "x"\ncommand = ["ls", "{q}"]\n', "undeclared arguments q"),
        ('[tools.t]\ndescription = "x"\ncommand = ["ls"]\ntimeout = "x"\n', "t.timeout"),
        (
            '[tools.t]\ndescription = "x"\ncommand = ["ls", "{e}"]\n'
            '[tools.t.args.e]\ntype = "enum"\n',
            "`enum` lists",
        ),
        ("[tools.t\n", "not valid TOML"),
    ],
)
def test_a_bad_declaration_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ProjectToolsError) as err:
        parse_project_tools(text, RESERVED_NAMES)
    assert reason in str(err.value)


LIST_SRC = {
    "description": "List the source folder",
    "command": ["ls", "{dir}"],
    "read_only": True,
    "args": {"dir": {"type": "path", "description": "a folder"}},
}


async def test_an_improvement_adds_checks_changes_and_removes_a_project_tool(
    tooled: Path, tmp_path: Path
) -> None:
    user_config = tmp_path / "user-config.toml"
    settings = load_settings(tooled, environ={}, user_config=user_config, trusted=True).settings

    async def apply(name: str, tool: object, trusted: bool = True) -> Improvement:
        change = ImprovementPatch.model_validate(
            {"summary": "tool", "project_tools": [{"name": name, "tool": tool}]}
        )
        return await apply_improvement(
            tooled, change, "add a tool", settings, trusted=trusted, user_config=user_config
        )

    tools_file = tooled / ".agent-lsp" / "tools.toml"
    record = await apply("list_src", LIST_SRC)
    assert "project tool list_src ran once (`ls`: exit 0)" in record.checked
    declared = parse_project_tools(tools_file.read_text(), RESERVED_NAMES)
    assert list(declared) == ["write_note", "list_src"]  # the existing tool kept
    assert declared["list_src"].model_dump(exclude_none=True) == {
        **LIST_SRC,
        "timeout": 60.0,
        "args": {"dir": {"type": "path", "required": False, "description": "a folder"}},
    }

    before = tools_file.read_bytes()
    failing = {**LIST_SRC, "command": ["ls", "no-such-folder", "{dir}"]}
    with pytest.raises(ImprovementError) as err:
        await apply("list_src", failing)
    assert "rolled back, nothing changed: project tool list_src failed its run" in str(err.value)
    assert tools_file.read_bytes() == before
    for bad, reason in [
        ("read_file", "one of agent-lsp's own tools"),
        ("Bad-Name", "is not a tool name"),
    ]:
        with pytest.raises(ImprovementError) as err:
            await apply(bad, LIST_SRC)
        assert reason in str(err.value)
    with pytest.raises(ImprovementError) as err:
        await apply("other", LIST_SRC, trusted=False)
    assert "project tools are used only in a trusted workspace" in str(err.value)
    assert tools_file.read_bytes() == before

    await apply("write_note", None)
    await apply("list_src", None)
    assert not tools_file.exists()  # no tool left: no file


def test_an_unreadable_or_broken_tools_file_is_not_used_and_said_why(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".agent-lsp" / "tools.toml").mkdir(parents=True)  # a folder, not a file
    unreadable = read_project_tools(root, True, RESERVED_NAMES)
    assert unreadable.tools == {} and "cannot be read" in unreadable.warnings[0]
    (root / ".agent-lsp" / "tools.toml").rmdir()
    (root / ".agent-lsp" / "tools.toml").write_text("[tools.x\n")
    broken = read_project_tools(root, True, RESERVED_NAMES)
    assert broken.tools == {} and "not valid TOML" in broken.warnings[0]
    assert "no project tool is used" in broken.warnings[0]
