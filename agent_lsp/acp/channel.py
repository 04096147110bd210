"""`AcpChannel`: the EditorChannel of an ACP session. Progress and the model's words are
`agent_message_chunk`s, tool calls `tool_call` / `tool_call_update`s (kind, status, an edit's
diff), questions `session/request_permission` naming what is asked (the whole command, the
file) — no answer, a cancelled request or a broken connection is no answer, which is a deny.
Edits go through the client's `fs/write_text_file` when it offers it, else to disk atomically;
in review mode each is a permission request carrying its diff first (Apply / Reject). Where the
client offers `fs/read_text_file`, a file is asked for before a tool reads or edits it: the
client's text (unsaved changes included) is the truth, as an LSP editor's buffer is. After
each model call of the task's loop, a `usage_update`: the tokens in the context now (the
request's prompt and its reply) of the window the loop uses."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import RequestError, text_block, tool_content, tool_diff_content
from acp.helpers import start_tool_call, update_agent_message_text, update_tool_call
from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AllowedOutcome,
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UsageUpdate,
    UserMessageChunk,
)

from agent_lsp.acp.updates import call_title, option_ids, option_kind, plan_update, tool_kind
from agent_lsp.errors import EditRejectedError
from agent_lsp.fileio import atomic_write, read_disk_text
from agent_lsp.messages import AgentEvent, EventKind
from agent_lsp.seams import reply_text
from agent_lsp.team.presenter import PLAN

log = logging.getLogger(__name__)

Update = (
    AgentMessageChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | UsageUpdate
    | AgentPlanUpdate
)
Content = ContentToolCallContent | FileEditToolCallContent
APPLY, REJECT = "Apply", "Reject"
_SAID = (EventKind.STARTED, EventKind.MESSAGE, EventKind.FINISHED)


@dataclass
class _Call:
    """The tool call running now and what it showed (an update replaces the content whole)."""

    id: str
    kind: ToolKind
    content: list[Content] = field(default_factory=list[Content])


class AcpChannel:
    def __init__(
        self,
        client: Client,
        session_id: str,
        root: Path,
        *,
        client_writes: bool = False,
        client_reads: bool = False,
        review: bool = False,
    ) -> None:
        """`client_writes`: edits through `fs/write_text_file`; `client_reads`: files asked
        for through `fs/read_text_file` before a tool reads or edits them; `review` (`applyMode
        = "review"`): each edit asked first (Apply / Reject) with its diff."""
        self.client = client
        self.session_id = session_id
        self.root = root.resolve()
        self.client_writes = client_writes
        self.client_reads = client_reads
        self.review = review
        self._texts: dict[Path, str] = {}  # the client's text where it differs from the disk
        self._count = 0
        self._open: _Call | None = None
        self._lock = asyncio.Lock()  # updates go out in the order they happened
        self._live: list[str] = []  # the model's words streamed in, not sent yet
        self._usage: UsageUpdate | None = None  # the last model call's, not sent yet
        self.window: int | None = None  # the context window of the task's loop, once known
        self._heard = ""  # the words of the model's reply streamed so far
        self._flusher: asyncio.Task[None] | None = None
        self._listening = False  # the model is being asked for the loop's next step

    # -- the seam ----------------------------------------------------------------------------

    def buffers(self) -> Mapping[Path, str]:
        return self._texts

    async def fetch_buffer(self, path: Path) -> None:
        """The client's text of `path` (a file of the workspace), kept where it differs from
        the disk: its unsaved changes. A client that cannot read it leaves the disk's text."""
        if not self.client_reads:
            return
        resolved = await asyncio.to_thread(path.resolve)
        if not resolved.is_relative_to(self.root) or not await asyncio.to_thread(path.is_file):
            self._texts.pop(path, None)
            return
        try:
            answer = await self.client.read_text_file(session_id=self.session_id, path=str(path))
        except (RequestError, ConnectionError) as exc:
            log.info("fs/read_text_file %s: %s (the disk's text is used)", path, exc)
            self._texts.pop(path, None)
            return
        if answer.content == await asyncio.to_thread(_old_text, path):
            self._texts.pop(path, None)
        else:
            self._texts[path] = answer.content

    async def apply_edit(self, path: Path, new_text: str, label: str) -> None:
        """The edit written (with `review`, only once the user said Apply to its diff)."""
        before = await asyncio.to_thread(_old_text, path)
        diff = tool_diff_content(str(path), new_text, before)
        if self.review:
            said = await self._permission(f"Apply {label}?", diff, [APPLY, REJECT])
            if said != APPLY:
                raise EditRejectedError(f"{label}: {'rejected' if said else 'no answer'} in review")
        if self.client_writes:
            try:
                await self.client.write_text_file(
                    session_id=self.session_id, path=str(path), content=new_text
                )
            except (RequestError, ConnectionError) as exc:
                raise EditRejectedError(f"{label}: the client did not write it ({exc})") from exc
        else:
            await asyncio.to_thread(atomic_write, path, new_text)
        if path in self._texts:  # the client's unsaved text, now changed by this edit
            if self.client_writes:
                self._texts[path] = new_text
            else:
                del self._texts[path]
        call = self._open or await self._start(label, "edit", "in_progress")
        call.content.append(diff)
        await self.send(update_tool_call(call.id, content=call.content))

    async def report(self, event: AgentEvent) -> None:
        # The model's words are shown as they stream in while the model is asked for its next
        # step (only then: not a summary or a distillation the harness asks for).
        if event.kind is EventKind.THINKING:
            self._heard, self._listening = "", True
            reply_text.set(self._hear)
            return
        reply_text.set(None)
        heard = self._end_heard()
        if event.kind is EventKind.MESSAGE and heard and event.message.strip() == heard.strip():
            return  # said already, as it streamed in
        if event.kind is EventKind.TOOL_CALL:
            await self._close("completed", None)  # a call the loop left open (never: safety)
            tool = event.data.get("tool")
            name = tool if isinstance(tool, str) else None
            title, locations, args = call_title(event.message, name, self.root)
            call = await self._start(title, tool_kind(name), "pending", locations, args)
            await self.send(update_tool_call(call.id, status="in_progress"))
        elif event.kind is EventKind.TOOL_RESULT:
            failed = event.data.get("status") not in (None, "success")
            await self._close("failed" if failed else "completed", event.message)
        elif event.kind in _SAID:
            await self.say(event.message)
        plan = event.data.get(PLAN)
        if isinstance(plan, list) and plan:  # a team task's plan as it stands
            await self.send(plan_update(cast("list[dict[str, str]]", plan)))

    async def ask(self, question: str, options: Sequence[str]) -> str | None:
        """A permission request with the question whole (the command, the reasons) in the
        tool call it names: the running one, or one of its own. A question without options
        (answered in words) cannot be put through ACP: no answer."""
        if not options:
            await self.say(f"(not asked: a question in words, which ACP cannot put) {question}")
            return None
        return await self._permission(question, tool_content(text_block(question)), options)

    async def _permission(self, title: str, shown: Content, options: Sequence[str]) -> str | None:
        """The option picked (None: no answer, a cancelled request, a broken connection)."""
        own = self._open is None
        call = self._open or await self._start(title, "other", "pending")
        ids = option_ids(options)
        offered = [
            PermissionOption(option_id=i, name=o, kind=option_kind(o))
            for i, o in zip(ids, options, strict=True)
        ]
        asked = ToolCallUpdate(
            tool_call_id=call.id,
            title=title,
            kind=call.kind,
            status="pending",
            content=[*call.content, shown],
        )
        try:
            answer = await self.client.request_permission(
                session_id=self.session_id, tool_call=asked, options=offered
            )
        except (RequestError, ConnectionError, ValueError) as exc:
            log.warning("permission request not answered: %s", exc)
            answer = None
        picked = None
        if answer is not None and isinstance(answer.outcome, AllowedOutcome):
            chosen = answer.outcome.option_id
            picked = options[ids.index(chosen)] if chosen in ids else None
        if own:
            await self._close("completed", f"answer: {picked or 'none'}")
        elif picked is not None and option_kind(picked).startswith("allow"):
            await self.send(update_tool_call(call.id, status="in_progress"))
        return picked

    # -- updates -----------------------------------------------------------------------------

    def log_record(self, entry: Mapping[str, Any]) -> None:
        """A session log listener: the model's reply is whole once its call is logged (what
        the harness asks the model afterwards, a distillation, is not shown live); a call of
        the loop is the context's usage now, sent soon (a distillation's is another context)."""
        if entry.get("kind") != "model_call":
            return
        self._listening = False
        if entry.get("purpose") == "agent" and self.window is not None:
            used = int(entry.get("prompt_tokens") or 0) + int(entry.get("completion_tokens") or 0)
            self._usage = UsageUpdate(session_update="usage_update", used=used, size=self.window)
            self._soon()

    def _end_heard(self) -> str:
        """The words streamed since the model was asked, ended with a new line."""
        self._listening = False
        heard, self._heard = self._heard, ""
        if heard and not heard.endswith("\n"):
            self._live.append("\n")
        return heard

    async def say(self, text: str) -> None:
        self._end_heard()
        if text:
            await self.send(update_agent_message_text(text if text.endswith("\n") else text + "\n"))

    async def send(self, update: Update | None = None) -> None:
        """One `session/update` (after the words streamed in and the usage kept before it); a
        connection gone is nobody to tell (the task goes on)."""
        async with self._lock:
            if self._live:
                text, self._live = "".join(self._live), []
                await self._send(update_agent_message_text(text))
            if self._usage is not None:
                usage, self._usage = self._usage, None
                await self._send(usage)
            if update is not None:
                await self._send(update)

    async def _send(self, update: Update) -> None:
        with contextlib.suppress(ConnectionError):
            await self.client.session_update(session_id=self.session_id, update=update)

    def _hear(self, text: str) -> None:
        """The `reply_text` sink: the words kept, sent soon (in order) by one flusher."""
        if not self._listening:
            return
        self._live.append(text)
        self._heard += text
        self._soon()

    def _soon(self) -> None:
        """What is kept (words, usage) sent soon, in order, by one flusher."""
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self.send())

    async def cancelled(self) -> None:
        await self._close("failed", "cancelled")

    async def _start(
        self,
        title: str,
        kind: ToolKind,
        status: ToolCallStatus,
        locations: Sequence[Any] = (),
        args: Any = None,
    ) -> _Call:
        self._count += 1
        call = self._open = _Call(f"call-{self._count}", kind)
        start = start_tool_call(
            call.id, title, kind=kind, status=status, locations=locations or None, raw_input=args
        )
        await self.send(start)
        return call

    async def _close(self, status: ToolCallStatus, text: str | None) -> None:
        if self._open is None:
            return
        call, self._open = self._open, None
        if text:
            call.content.append(tool_content(text_block(text)))
        await self.send(update_tool_call(call.id, status=status, content=call.content or None))


def _old_text(path: Path) -> str | None:
    try:
        return read_disk_text(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
