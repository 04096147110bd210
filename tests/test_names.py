"""A hallucinated name: an edit calling a name defined nowhere is not written until the model
repeats the call (the real openai client, the scripted server, the real symbol index)."""

from __future__ import annotations

from pathlib import Path

from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.scripts import tool_messages
from tests.test_agent import make_session

OLD = "    return a + b\n"
NEW = "    return compute_totl([a, b]) + len(str(average([a])))\n"


async def test_a_name_defined_nowhere_is_flagged_until_confirmed(
    project: Path, fake_openai: FakeOpenAIServer
) -> None:
    calc = project / "calc.py"
    before = calc.read_bytes()
    call = ToolCall("edit_file", {"path": "calc.py", "old_text": OLD, "new_text": NEW})
    fake_openai.script(Reply(tool_calls=[call]), Reply(tool_calls=[call]), Reply("Done."))
    session = make_session(project, fake_openai.base_url)
    channel = RecordingChannel()
    written: list[bytes] = []
    apply = channel.apply_edit

    async def record(path: Path, text: str, label: str) -> None:
        written.append(calc.read_bytes())
        await apply(path, text, label)

    channel.apply_edit = record  # type: ignore[method-assign]
    await session.run_task(Task(kind=TaskKind.TASK, instruction="sum with a helper"), channel)
    await session.aclose()

    first = tool_messages(fake_openai.requests[1])[0]
    assert '"status":"error"' in first
    assert (
        "not written: `compute_totl` defined nowhere in the project (calc.py, the symbol "
        "index, the builtins); if it is right"
    ) in first
    assert "average" not in first.split("not written:")[1].split("defined")[0]
    assert written == [before]  # the first call wrote nothing; the confirming one did
    second = tool_messages(fake_openai.requests[2])[1]
    assert "edited calc.py at line 5" in second
    assert calc.read_text() == before.decode().replace(OLD, NEW)
