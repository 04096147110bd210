"""The review before done flags a changed file the task never named and the agent never read
(issue: the single agent had no check that it touched only files the task concerns): said to
the user as it is found and in the outcome, not sent back to the model. Through the loop with
the real openai client against the fake server and real pytest; the rules on a real workspace."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.loop.scope import unseen_changes
from agent_lsp.messages import ChatMessage, EventKind, TaskStatus
from agent_lsp.messages import ToolCall as Call
from agent_lsp.project.workspace import Workspace
from agent_lsp.task import Task, TaskKind
from tests.conftest import BUG, FIX
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.test_agent import FIX_TASK, make_session

HELPERS = "def clamp(x: float) -> float:\n    return x\n"
FLAG = "review: changed helpers.py, which the task never named and the agent never read"


def edit(path: str, old: str, new: str) -> Reply:
    return Reply(
        tool_calls=[ToolCall("edit_file", {"path": path, "old_text": old, "new_text": new})]
    )


async def test_a_stray_edit_is_flagged_in_the_outcome_and_costs_no_model_call(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    (project / "helpers.py").write_text(HELPERS)
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        edit("calc.py", BUG, FIX),
        edit("helpers.py", "    return x\n", "    return max(0.0, x)\n"),
        Reply("Fixed average()."),
    )
    channel = RecordingChannel()
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome
    assert outcome.changed_files == ["calc.py", "helpers.py"]
    assert FLAG in outcome.checked, outcome.checked
    assert "calc.py," not in outcome.checked.split("review:", 1)[1]
    said = [e for e in channel.events if e.kind is EventKind.MESSAGE and e.message == FLAG]
    assert len(said) == 1 and said[0].data["unseen"] == ["helpers.py"]
    assert len(fake_openai.requests) == 4  # nothing went back to the model
    assert (project / "helpers.py").read_text() == "def clamp(x: float) -> float:\n" + (
        "    return max(0.0, x)\n"
    )


async def test_the_files_a_task_concerns_are_not_flagged(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    """calc.py is the task's file; notes.py is created; helpers.py is read before its edit."""
    (project / "helpers.py").write_text(HELPERS)
    fake_openai.script(
        edit("calc.py", BUG, FIX),
        Reply(tool_calls=[ToolCall("write_file", {"path": "notes.py", "content": "X = 1\n"})]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "helpers.py"})]),
        edit("helpers.py", "    return x\n", "    return max(0.0, x)\n"),
        Reply("Fixed average()."),
    )
    channel = RecordingChannel()
    session = make_session(project, fake_openai.base_url)
    outcome = await session.run_task(FIX_TASK, channel)
    await session.aclose()

    assert outcome.status is TaskStatus.COMPLETED, outcome
    assert outcome.changed_files == ["calc.py", "notes.py", "helpers.py"]
    assert outcome.checked.startswith("verified: ")
    assert "never named" not in outcome.checked, outcome.checked
    assert not [e for e in channel.events if "never named" in e.message]


def changed(tmp_path: Path, files: dict[str, str], edited: list[str]) -> Workspace:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    workspace = Workspace(tmp_path, RecordingChannel())
    workspace.changed_files.extend(edited)
    return workspace


def task(words: str, path: str | None = None) -> Task:
    return Task(kind=TaskKind.TASK, instruction=words, path=path)


def test_named_by_the_task_or_defining_its_names_is_the_task_s_concern(tmp_path: Path) -> None:
    workspace = changed(
        tmp_path,
        {
            "shop/stock.py": "class Stock:\n    def remove(self, n):\n        return n\n",
            "shop/cart.js": "class Cart {\n  lineTotal(item) {\n    return 0\n  }\n}\n",
            "shop/money.go": "package shop\n\nfunc (m *Money) Split(n int) int {\n\treturn n\n}\n",
            "shop/util.py": "def other():\n    return 1\n",
            "README.md": "# shop\n",
        },
        ["shop/stock.py", "shop/cart.js", "shop/money.go", "shop/util.py", "README.md"],
    )
    said = task("Fix Stock.remove, lineTotal and split; say so in README.md")
    assert unseen_changes(said, workspace, []) == ["shop/util.py"]
    # the user's file, and a name in the words of a diagnostic-less task by its path
    assert unseen_changes(task("tidy up", "shop/util.py"), workspace, []) == [
        "shop/stock.py",
        "shop/cart.js",
        "shop/money.go",
        "README.md",
    ]
    assert unseen_changes(task("tidy shop/util.py and the rest"), workspace, [])[-1] == (
        "README.md"
    )


def test_what_the_conversation_showed_or_read_counts_even_after_a_resume(tmp_path: Path) -> None:
    workspace = changed(
        tmp_path,
        {"a.py": "x = 1\n", "b.py": "y = 2\n", "c.py": "z = 3\n", "d.py": "w = 4\n"},
        ["a.py", "b.py", "c.py", "d.py"],
    )
    messages = [
        ChatMessage(role="system", content="map: a.py b.py c.py d.py"),
        ChatMessage(role="user", content="Make it faster.\n\nProject map:\na.py\nb.py\nc.py"),
        ChatMessage(
            role="assistant",
            tool_calls=[
                Call(id="1", name="read_file", arguments='{"path": "./a.py"}'),
                Call(id="2", name="list_files", arguments="{}"),
                Call(id="3", name="run_tests", arguments="{}"),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="1", content="[compacted]"),
        ChatMessage(role="tool", tool_call_id="2", content="a.py b.py c.py d.py"),
        ChatMessage(role="tool", tool_call_id="3", content='File "/w/b.py", line 1, in <module>'),
        ChatMessage(role="user", content="The tests fail: c.py:1: NameError"),
    ]
    # a.py: read (its result compacted away); b.py: in a test failure; c.py: in feedback;
    # d.py only in the map and a listing: names, not the file's text
    assert unseen_changes(task("Make it faster."), workspace, messages) == ["d.py"]


def test_a_source_whose_test_the_agent_read_is_its_concern(tmp_path: Path) -> None:
    workspace = changed(
        tmp_path,
        {
            "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = ['tests']\n",
            "price.py": "def net(x):\n    return x\n",
            "tests/test_price.py": "from price import net\n\ndef test_net():\n    assert net(1)\n",
            "other.py": "def f():\n    return 2\n",
        },
        ["price.py", "other.py"],
    )
    workspace.note_read(tmp_path / "tests/test_price.py", "seen")
    assert unseen_changes(task("make the failing test pass"), workspace, []) == ["other.py"]


def test_what_the_harness_says_back_of_the_agent_s_own_edits_is_no_look(tmp_path: Path) -> None:
    workspace = changed(tmp_path, {"stray.py": "x = 1\n", ".github/ci.yml": "on: push\n"}, [])
    workspace.changed_files.extend(["stray.py", ".github/ci.yml"])
    workspace.note_read(tmp_path / "stray.py", "x = 2\n", looked=False)  # shown back after it
    messages = [
        ChatMessage(role="user", content="Add validation for the signup form"),
        ChatMessage(role="user", content="Applied the edits written in your reply:\n- stray.py"),
        ChatMessage(role="user", content="[Summary of the earlier conversation]\nstray.py: x"),
        ChatMessage(
            role="assistant",
            tool_calls=[Call(id="1", name="read_file", arguments='{"path": ".github/ci.yml"}')],
        ),
    ]
    # `for (…) {` in a JS file is no method "for" the task's words name
    (tmp_path / "form.js").write_text("for (let i = 0; i < 3; i++) {\n  go(i)\n}\n")
    workspace.changed_files.append("form.js")
    said = task("Add validation for the signup form")
    assert unseen_changes(said, workspace, messages) == ["stray.py", "form.js"]


def test_a_file_in_an_extra_root_is_not_judged_and_a_long_talk_stays_quick(tmp_path: Path) -> None:
    workspace = changed(tmp_path, {"a.py": "x = 1\n"}, ["a.py", "/elsewhere/lib.py"])
    talk = [ChatMessage(role="user", content="go")] + [
        ChatMessage(role="user", content=f"src/file{n}.py:{n}: failed\n" * 200) for n in range(300)
    ]
    assert unseen_changes(task("go"), workspace, talk) == ["a.py"]
