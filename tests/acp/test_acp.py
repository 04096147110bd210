"""`agent-lsp acp` as an ACP client runs it: a subprocess driven over its stdin and stdout by
the SDK's client side, the fake model over HTTP, real pytest. The updates stream as the task
runs (tool calls with kinds and statuses, the edit's diff with the exact old and new text, the
model's words, the context's usage after each model call), permissions are asked with the whole
command and the answer decides, a cancel ends the prompt `cancelled`, and bad input is a
JSON-RPC error, never a crash."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    ContentToolCallContent,
    DeniedOutcome,
    FileEditToolCallContent,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
    WriteTextFileResponse,
)

from tests.conftest import BUG, FIX
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall
from tests.scripts import SUMMARY, fix_average_script, tool_messages

COMMAND = "touch made.txt; true"  # a compound command: the policy asks (Allow once | Deny)


class Recorder:
    """An ACP client that keeps every update and answers permissions with `answer` (an option
    kind, or None: the request cancelled); with `writes`, it writes files itself."""

    def __init__(
        self,
        answer: str | None = "allow_once",
        writes: bool = False,
        unsaved: dict[str, str] | None = None,
    ) -> None:
        self.answer = answer
        self.writes = writes
        self.unsaved = unsaved  # path -> the text of its buffer; None: the client cannot read
        self.read: list[str] = []
        self.updates: list[Any] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.written: list[tuple[str, str]] = []

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate, **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        picked = [o for o in options if o.kind == self.answer]
        if not picked:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=picked[0].option_id)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def write_text_file(
        self, content: str, path: str, session_id: str, **_: Any
    ) -> WriteTextFileResponse:
        self.written.append((path, content))
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def read_text_file(self, path: str, session_id: str, **_: Any) -> ReadTextFileResponse:
        self.read.append(path)
        assert self.unsaved is not None, "read although the client did not offer it"
        text = self.unsaved.get(path)
        return ReadTextFileResponse(content=Path(path).read_text() if text is None else text)

    def said(self) -> str:
        return "".join(
            u.content.text
            for u in self.updates
            if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContentBlock)
        )

    def calls(self) -> dict[str, list[Any]]:
        """Each tool call's start and updates, by id, in order."""
        by_id: dict[str, list[Any]] = {}
        for u in self.updates:
            if isinstance(u, ToolCallStart | ToolCallProgress):
                by_id.setdefault(u.tool_call_id, []).append(u)
        return by_id


async def asked_the_model(server: FakeOpenAIServer) -> None:
    """Until the model has been asked (it hangs then: the task is running)."""
    while not server.requests:  # noqa: ASYNC110 - the fake server runs in a thread of its own
        await asyncio.sleep(0.1)


@asynccontextmanager
async def acp_agent(
    client: Recorder, env: dict[str, str], tmp_path: Path, *args: str
) -> AsyncIterator[tuple[ClientSideConnection, Path]]:
    """`agent-lsp acp` spawned and initialized; yields the connection and its stderr file,
    and checks that it ended cleanly, with no traceback."""
    stderr = tmp_path / "acp-stderr.txt"
    with stderr.open("wb") as err:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "agent_lsp",
            "acp",
            *args,
            env=env,
            # a loaded machine may take more than the 2 s the SDK waits before SIGTERM
            transport_kwargs={"stderr": err.fileno(), "shutdown_timeout": 30.0},
        ) as (conn, process):
            fs = FileSystemCapabilities(
                write_text_file=client.writes, read_text_file=client.unsaved is not None
            )
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(fs=fs),
            )
            assert init.protocol_version == PROTOCOL_VERSION
            assert init.agent_capabilities is not None
            assert init.agent_capabilities.load_session is True
            yield conn, stderr
        assert await asyncio.wait_for(process.wait(), 30) == 0
    assert "Traceback" not in stderr.read_text(), stderr.read_text()


@pytest.mark.parametrize("writes", [False, True], ids=["own-write", "client-writes"])
async def test_the_fix_end_to_end_over_acp(
    project: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
    tmp_path: Path,
    writes: bool,
) -> None:
    fake_openai.props = {"default_generation_settings": {"n_ctx": 65_536}}  # llama.cpp's
    script = fix_average_script()
    fake_openai.script(*[replace(r, usage=(1000 + i, 20 + i)) for i, r in enumerate(script)])
    before = (project / "calc.py").read_text()
    client = Recorder(writes=writes)
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        done = await conn.prompt(
            session_id=new.session_id, prompt=[text_block("make the failing test pass")]
        )
    assert done.stop_reason == "end_turn"
    assert done.usage is not None
    assert (done.usage.input_tokens, done.usage.output_tokens) == (4006, 86)  # the task's
    # after each model call, what the context holds now (the request's prompt and its reply)
    # of the window the session uses (the one the server serves)
    usage = [(u.used, u.size) for u in client.updates if isinstance(u, UsageUpdate)]
    assert usage == [(1020 + 2 * i, 65_536) for i in range(len(script))], usage
    # each before the tool call its reply asked for (the harness's own review comes after)
    shown = [
        u.title if isinstance(u, ToolCallStart) else "usage"
        for u in client.updates
        if isinstance(u, UsageUpdate | ToolCallStart)
    ]
    assert shown[:7] == [
        "usage",
        "read_file calc.py",
        "usage",
        "edit_file calc.py",
        "usage",
        "run_tests {}",
        "usage",
    ], shown
    after = before.replace(BUG, FIX)
    assert (project / "calc.py").read_text() == after  # the bytes on disk: fixed
    path = str(project.resolve() / "calc.py")
    assert client.written == ([(path, after)] if writes else [])
    calls = client.calls()
    starts = [c[0] for c in calls.values()]
    assert all(isinstance(s, ToolCallStart) and s.status == "pending" for s in starts)
    by_title = {
        s.title: (s.kind, c[-1].status) for s, c in zip(starts, calls.values(), strict=True)
    }
    assert by_title["read_file calc.py"] == ("read", "completed"), by_title
    assert by_title["edit_file calc.py"] == ("edit", "completed"), by_title
    assert by_title["run_tests {}"] == ("execute", "completed"), by_title
    assert all(c[-1].status == "completed" for c in calls.values()), by_title
    assert all(any(u.status == "in_progress" for u in c) for c in calls.values())
    (edit,) = [c for s, c in zip(starts, calls.values(), strict=True) if s.kind == "edit"]
    diffs = [b for u in edit for b in u.content or () if isinstance(b, FileEditToolCallContent)]
    assert diffs and all((d.path, d.old_text, d.new_text) == (path, before, after) for d in diffs)
    (read,) = [s for s in starts if s.kind == "read"]
    assert read.locations is not None and read.locations[0].path == path
    said = client.said()
    assert "started: make the failing test pass" in said
    assert f"■ completed after 4 steps: {SUMMARY}" in said and "changed: calc.py" in said
    results = [
        b.content.text
        for c in calls.values()
        for b in c[-1].content or ()
        if isinstance(b, ContentToolCallContent) and isinstance(b.content, TextContentBlock)
    ]
    assert any("passed" in r for r in results), results  # the test verdict, in its call
    # the model's words streamed in as it answered (the fake sends them whole), each reply's
    # once, ended by a new line before what comes next
    order = [
        u.content.text
        for u in client.updates
        if isinstance(u, AgentMessageChunk) and isinstance(u.content, TextContentBlock)
    ]
    # (how the words split into chunks depends on timing: a loaded machine sends the new line
    # in the same chunk)
    assert "".join(order[:-1]).endswith(SUMMARY + "\n"), order
    assert said.count(SUMMARY) == 2  # as it streamed in, and in the outcome


@pytest.mark.parametrize("reads", [True, False], ids=["client-reads", "no-reads"])
async def test_a_file_is_read_as_the_client_holds_it_unsaved_changes_included(
    project: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
    tmp_path: Path,
    reads: bool,
) -> None:
    """A client offering `fs/read_text_file` is asked for a file before the model reads or
    edits it: its unsaved text is what the model sees and what the edit changes (as an LSP
    editor's buffer); without it, the disk's text."""
    disk = (project / "calc.py").read_text()
    typed = "# the user's unsaved line\n" + disk
    path = str(project.resolve() / "calc.py")
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": BUG, "new_text": FIX})
            ]
        ),
        Reply("Fixed."),
    )
    client = Recorder(unsaved={path: typed} if reads else None)
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("fix average")])
    assert done.stop_reason == "end_turn"
    (seen,) = tool_messages(fake_openai.requests[1])
    assert ("the user's unsaved line" in seen) is reads, seen
    # the edit changed the text the client holds (its line kept), written to disk
    assert (project / "calc.py").read_text() == (typed if reads else disk).replace(BUG, FIX)
    assert client.read == ([path, path] if reads else [])  # before the read, before the edit


@pytest.mark.parametrize(
    ("answer", "ran", "refusal"),
    [
        ("reject_once", False, "not run: user: denied"),
        (None, False, "not run: no answer (denied)"),  # the request cancelled: deny
        ("allow_once", True, None),
    ],
    ids=["reject", "no-answer", "allow"],
)
async def test_a_permission_request_names_the_command_and_the_answer_decides(
    project: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
    tmp_path: Path,
    answer: str | None,
    ran: bool,
    refusal: str | None,
) -> None:
    fake_openai.script(
        Reply(tool_calls=[ToolCall("run_command", {"command": COMMAND})]), Reply("Stopped.")
    )
    client = Recorder(answer=answer)
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("tidy up")])
    assert done.stop_reason == "end_turn"
    (asked, options), *_ = client.asked
    assert asked.title is not None and asked.title.startswith(f"agent-lsp wants to run: {COMMAND}")
    assert asked.kind == "execute" and asked.status == "pending"
    texts = [
        b.content.text
        for b in asked.content or ()
        if isinstance(b, ContentToolCallContent) and isinstance(b.content, TextContentBlock)
    ]
    assert any(COMMAND in t for t in texts), texts
    assert [(o.name, o.kind) for o in options] == [
        ("Allow once", "allow_once"),
        ("Deny", "reject_once"),
    ]
    assert (project / "made.txt").exists() is ran
    calls = client.calls().values()
    (command,) = [c for c in calls if (c[0].title or "").startswith("run_command ")]
    assert command[0].kind == "execute"
    assert command[0].tool_call_id == asked.tool_call_id  # the request names the running call
    assert command[-1].status == ("completed" if ran else "failed")
    said = tool_messages(fake_openai.requests[1])[0]
    assert ("not run" not in said) if refusal is None else (refusal in said), said


@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_in_review_mode_each_edit_is_asked_with_its_diff_first(
    project: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
    tmp_path: Path,
    answer: str,
) -> None:
    (project / ".agent-lsp").mkdir(exist_ok=True)
    (project / ".agent-lsp" / "config.toml").write_text('applyMode = "review"\n')
    fake_openai.script(*fix_average_script())
    before = (project / "calc.py").read_text()
    client = Recorder(answer=answer)
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("fix the average")])
    edits = [(t, o) for t, o in client.asked if (t.title or "").startswith("Apply ")]
    (asked, options), *_ = edits
    assert asked.kind == "edit" and [(o.name, o.kind) for o in options] == [
        ("Apply", "allow_once"),
        ("Reject", "reject_once"),
    ]
    after = before.replace(BUG, FIX)
    path = str(project.resolve() / "calc.py")
    (diff,) = [b for b in asked.content or () if isinstance(b, FileEditToolCallContent)]
    assert (diff.path, diff.old_text, diff.new_text) == (path, before, after)
    applied = answer == "allow_once"
    assert (project / "calc.py").read_text() == (after if applied else before)
    said = tool_messages(fake_openai.requests[2])[-1]  # the edit's result, as the model saw it
    assert ("rejected in review" in said) is not applied, said


async def test_cancel_ends_the_prompt_cancelled(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.script(Hang(60), Reply("too late"))
    client = Recorder()
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=new.session_id, prompt=[text_block("fix it")])
        )
        await asyncio.wait_for(asked_the_model(fake_openai), 60)
        started = time.monotonic()
        await conn.cancel(session_id=new.session_id)
        done = await asyncio.wait_for(prompt, 30)
        assert done.stop_reason == "cancelled"
        assert time.monotonic() - started < 30  # not the model's 60 s
        assert "■ cancelled" in client.said()
        # the session serves the next prompt
        fake_openai.script(Reply("Nothing to do."), Reply("Nothing at all."))
        again = await conn.prompt(session_id=new.session_id, prompt=[text_block("anything?")])
        assert again.stop_reason == "end_turn"
    assert (project / "calc.py").read_text().count(BUG) == 1


async def test_bad_input_is_a_json_rpc_error_never_a_crash(
    project: Path, server_env: dict[str, str], tmp_path: Path
) -> None:
    client = Recorder()
    async with acp_agent(client, server_env, tmp_path) as (conn, stderr):
        with pytest.raises(RequestError) as before_new:
            await conn.prompt(session_id="no-such-session", prompt=[text_block("fix it")])
        assert before_new.value.code == -32602
        assert "session/new first" in str(before_new.value)
        nowhere = tmp_path / "nowhere"
        with pytest.raises(RequestError) as not_a_folder:
            await conn.new_session(cwd=str(nowhere), mcp_servers=[])
        assert (not_a_folder.value.code, str(not_a_folder.value)) == (
            -32602,
            f"{nowhere} is not a folder",
        )
        with pytest.raises(RequestError) as relative:
            await conn.new_session(cwd="calc", mcp_servers=[])
        assert relative.value.code == -32602
        new = await conn.new_session(cwd=str(project), mcp_servers=[])  # still serving
        with pytest.raises(RequestError) as empty:
            await conn.prompt(session_id=new.session_id, prompt=[text_block("  ")])
        assert empty.value.code == -32602
    assert "Traceback" not in stderr.read_text()


async def test_a_loaded_session_continues_its_stopped_task_in_the_same_conversation(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.script(Reply("Done!"), Reply("Really done!"))
    first = Recorder()
    async with acp_agent(first, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        done = await conn.prompt(
            session_id=new.session_id, prompt=[text_block("make the failing test pass")]
        )
    assert done.stop_reason == "end_turn" and "■ failed" in first.said(), first.said()
    asked = len(fake_openai.requests)
    fake_openai.script(*fix_average_script())
    later = Recorder()  # another process: what it knows comes from the checkpoints
    async with acp_agent(later, server_env, tmp_path) as (conn, _):
        with pytest.raises(RequestError) as made_up:
            await conn.load_session(cwd=str(project), session_id="20260101-000000-abcdef")
        assert made_up.value.code == -32002, made_up.value
        with pytest.raises(RequestError) as not_an_id:  # never a path
            await conn.load_session(cwd=str(project), session_id="../../etc")
        assert not_an_id.value.code == -32602, not_an_id.value
        await conn.load_session(cwd=str(project), session_id=new.session_id, mcp_servers=[])
        replayed = [u for u in later.updates if isinstance(u, UserMessageChunk)]
        assert [u.content.text for u in replayed] == ["make the failing test pass"]
        assert "Done!" in later.said() and "your next prompt continues this task" in later.said()
        again = await conn.prompt(
            session_id=new.session_id, prompt=[text_block("the bug is in average()")]
        )
    assert again.stop_reason == "end_turn"
    assert (project / "calc.py").read_text().count(FIX) == 1
    went_on = fake_openai.requests[asked]["messages"]  # the same conversation, the hint last
    assistant = [m.get("content") for m in went_on if m["role"] == "assistant"]
    assert "Done!" in assistant and "Really done!" in assistant, assistant
    assert "the bug is in average()" in str(went_on[-1]["content"])
    assert "■ completed after" in later.said()


async def test_a_client_gone_mid_task_leaves_it_to_go_on_in_a_loaded_session(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    fake_openai.script(Hang(60), Reply("too late"))
    first = Recorder()
    async with acp_agent(first, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=new.session_id, prompt=[text_block("fix the average")])
        )
        await asyncio.wait_for(asked_the_model(fake_openai), 60)
    # the client closed the pipe mid-task: the agent ended at once (exit 0, checked above)
    prompt.cancel()
    fake_openai.script(*fix_average_script())
    later = Recorder()
    async with acp_agent(later, server_env, tmp_path) as (conn, _):
        await conn.load_session(cwd=str(project), session_id=new.session_id, mcp_servers=[])
        assert "your next prompt continues this task" in later.said(), later.said()
        again = await conn.prompt(session_id=new.session_id, prompt=[text_block("go on")])
    assert again.stop_reason == "end_turn"
    assert (project / "calc.py").read_text().count(FIX) == 1


async def test_a_question_of_the_agent_is_a_permission_request_with_its_options(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str], tmp_path: Path
) -> None:
    question = {"question": "Which runner?", "options": ["pytest", "unittest"]}
    fake_openai.script(Reply(tool_calls=[ToolCall("ask_user", question)]), Reply("Noted."))
    client = Recorder(answer="allow_once")  # the first option of that kind: pytest
    async with acp_agent(client, server_env, tmp_path) as (conn, _):
        new = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("set up the tests")])
    ((asked, options),) = client.asked
    assert asked.title == "Which runner?" and asked.kind == "think"
    assert [(o.name, o.kind) for o in options] == [
        ("pytest", "allow_once"),
        ("unittest", "allow_once"),
        ("Skip", "reject_once"),
    ]
    assert "the user answered: pytest" in tool_messages(fake_openai.requests[1])[0]


def test_a_root_that_is_not_a_folder_is_one_line(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_lsp", "acp", "--root", str(tmp_path / "nowhere")],
        env=server_env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == f"agent-lsp acp: {tmp_path / 'nowhere'} is not a folder\n"
    assert done.stdout == ""


def test_stdout_that_is_no_pipe_is_one_line(tmp_path: Path, server_env: dict[str, str]) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as fh:
        done = subprocess.run(
            [sys.executable, "-m", "agent_lsp", "acp"],
            env=server_env,
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line == (
        "agent-lsp: acp speaks JSON-RPC on stdin and stdout, and stdin and stdout are no pipes: "
        "start it from an ACP client"
    )
    assert out.read_text() == ""
