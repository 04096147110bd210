"""Summary compaction: when masking old tool outputs is not enough, one model call summarises
the older turns; the user's instructions and the last 10 turns stay whole; a failed summary
call keeps the masked history (the task goes on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_lsp.loop.compaction import SUMMARY_PROMPT, compact
from agent_lsp.messages import ChatMessage, TaskStatus
from agent_lsp.messages import ToolCall as Call
from agent_lsp.task import Task, TaskKind
from tests.fakes.channel import RecordingChannel
from tests.fakes.openai_server import Error, FakeOpenAIServer, Reply, ToolCall
from tests.test_agent import make_session

TASK = Task(kind=TaskKind.TASK, instruction="tidy the notes files")
SUMMARY = "## Task\ntidy the notes\n## Files touched\nsmall0.txt ... small4.txt read"


def read(path: str) -> Reply:
    return Reply(tool_calls=[ToolCall("read_file", {"path": path})])


def project(root: Path) -> Path:
    root.mkdir()
    for n in range(5):
        (root / f"small{n}.txt").write_text(f"small file {n}\n")
        (root / f"big{n}.txt").write_text(
            "".join(f"line {i} of big {n} " + "y" * 50 + "\n" for i in range(50))
        )
    return root


def is_summary(body: dict[str, Any]) -> bool:
    return str(body["messages"][0]["content"]) == SUMMARY_PROMPT


def run_plan(summary: Reply | Error) -> tuple[FakeOpenAIServer, list[Reply]]:
    plan = [
        *(read(f"small{n}.txt") for n in range(5)),
        *(read(f"big{n % 5}.txt") for n in range(12)),
    ]
    plan.append(Reply("Tidied."))

    def answer(body: dict[str, Any]) -> Reply | Error:
        return summary if is_summary(body) else plan.pop(0)

    return FakeOpenAIServer(default_reply=answer), plan


@pytest.mark.parametrize("works", [True, False])
async def test_a_summary_replaces_the_older_turns_and_keeps_the_last_ten_and_the_instructions(
    tmp_path: Path, works: bool
) -> None:
    root = project(tmp_path / "p")
    fake, plan = run_plan(Reply(SUMMARY) if works else Error(500, "summariser down"))
    channel = RecordingChannel()
    with fake:
        session = make_session(
            root,
            fake.base_url,
            model={
                "baseUrl": fake.base_url,
                "contextWindow": 9000,
                "maxRetries": 0,
                "profile": "full",
            },
        )
        outcome = await session.run_task(TASK, channel)
        await session.aclose()
    assert outcome.status is TaskStatus.COMPLETED, outcome
    assert plan == []
    requests = fake.requests
    asks = [n for n, r in enumerate(requests) if is_summary(r)]
    assert len(asks) == 1
    ask = requests[asks[0]]
    before, after = requests[asks[0] - 1], requests[asks[0] + 1]

    # The summarisation request: the older turns, the user's task among them; no tools.
    assert "tools" not in ask
    transcript = ask["messages"][1]["content"]
    assert transcript.startswith("The conversation so far:\n\n[user] tidy the notes files")
    assert '-> read_file {"path": "small0.txt"}' in transcript
    assert "small file 0" in transcript  # from the outputs as they were, not the masks

    task_text = requests[0]["messages"][1]["content"]
    events = [e.message for e in channel.events]
    kept = [m for m in before["messages"] if m["role"] in ("assistant", "tool")][-20:]
    if works:
        assert [m["role"] for m in after["messages"][:2]] == ["system", "user"]
        head = after["messages"][1]["content"]  # the task and the summary (joined: both user)
        assert head.startswith(task_text + "\n\n[Summary of the earlier conversation: ")
        assert head.endswith("turns, summarised to save context]\n" + SUMMARY)
        # the last 10 turns, whole: 9 the request before had, and the turn after it
        turns = [m for m in after["messages"][2:] if m["role"] in ("assistant", "tool")]
        assert len(turns) == 20 and turns[:-2] == kept[2:]
        assert not any(str(m["content"]).startswith("[compacted") for m in after["messages"])
        assert sum(m["role"] == "assistant" for m in after["messages"]) == 10
        assert any("older turns summarised" in m for m in events)
    else:
        assert any(m.startswith("context summary failed (") for m in events)
        assert after["messages"][1]["content"] == task_text
        old = [m for m in after["messages"][2:] if m["role"] == "tool"]
        assert old[0]["content"].startswith("[compacted: output of read_file omitted")
        turns = [m for m in after["messages"] if m["role"] in ("assistant", "tool")]
        assert turns[-20:-2] == kept[2:]


def test_masking_keeps_whole_turns_and_masks_old_test_feedback() -> None:
    messages = [ChatMessage(role="system", content="s"), ChatMessage(role="user", content="do it")]
    for n in range(12):
        messages.append(
            ChatMessage(
                role="assistant", tool_calls=[Call(id=f"c{n}", name="run_tests", arguments="{}")]
            )
        )
        messages.append(ChatMessage(role="tool", tool_call_id=f"c{n}", content=f"output {n}"))
        messages.append(ChatMessage(role="user", content=f"The task is not done: failure {n}"))
    out, masked = compact(messages)
    assert masked == 4  # turns 0 and 1: their tool output and the feedback after them
    assert out[:2] == messages[:2]
    assert (
        out[3].content.startswith("[compacted: output of run_tests omitted")
        if out[3].content
        else False
    )
    assert (
        out[4].content
        == "[compacted: earlier feedback omitted; it began: The task is not done: failure 0]"
    )
    assert out[8:] == messages[8:]  # the last 10 turns (and the feedback after them) whole
