"""Tool calls written in a reply's text, in the forms small local models use when the server
does not turn them into `tool_calls`:

- Qwen/Hermes blocks `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (one or several,
  the closing tag optional), which is also agent-lsp's own text protocol;
- JSON in a code fence (```json, ```tool_call or bare ```) with `name` and `arguments` (or
  `parameters`), the arguments an object or a JSON string; a bare JSON object, or a list of them;
- `NAME({…})` and `functions.NAME:` / `functions.NAME: {…}`;
- each of these HTML-escaped (`&lt;tool_call&gt;{&#34;name&#34;: …}`), as llama-cpp-python's
  `chatml-function-calling` format makes a model write.

Only the names of the offered tools count. The words around the calls stay the reply's text.
A call that is meant but cannot be run (broken JSON, an unknown tool, missing required
arguments) is left out and described in `format_error`, with the syntax expected, so the
model can be told exactly what to write."""

from __future__ import annotations

import contextlib
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from agent_lsp.messages import ModelReply, ToolCall, ToolSpec

SYNTAX = '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>'

ESCAPED_NOTE = (
    "the reply was HTML-escaped (&lt; &#34;): the server escapes the prompt, as "
    "llama-cpp-python's --chat_format chatml-function-calling does"
)
_ESCAPED = re.compile(r"&(?:lt|gt|quot|amp|#34|#39|#x27|#x22);")
_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|(?=<tool_call>)|\Z)", re.S)
_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n?(.*?)```", re.S)
_FUNCTIONS = re.compile(r"\bfunctions\.([A-Za-z_][A-Za-z0-9_]*)\s*:?")
_NAME_KEY = re.compile(r'\{\s*"(?:name|function)"\s*:')
_ARG_KEYS = ("arguments", "parameters", "args", "input")


@dataclass
class ParsedText:
    """A reply's text split into its words (`prose`), the calls found, and what was wrong
    with the calls that could not be taken (`error`, None when nothing was)."""

    prose: str
    calls: list[ToolCall] = field(default_factory=list[ToolCall])
    error: str | None = None


def unescape(text: str) -> str:
    """The text with HTML entities decoded when it looks escaped (`&lt;`, `&#34;` …)."""
    return html.unescape(text) if _ESCAPED.search(text) else text


def parse_tool_calls(content: str, tools: Sequence[ToolSpec], step_id: str) -> ParsedText:
    """Find the tool calls in `content` (see the module's docstring)."""
    reader = _Reader(unescape(content), {t.name: t for t in tools}, step_id)
    reader.read()
    return reader.result()


def calls_in_text(reply: ModelReply, tools: Sequence[ToolSpec], step_id: str) -> ModelReply:
    """A native reply without `tool_calls` whose text holds calls: the calls taken out of the
    text (the server did not parse the model's own format), said in the notes."""
    if reply.tool_calls or not tools or not reply.content:
        return reply
    parsed = parse_tool_calls(reply.content, tools, step_id)
    if not parsed.calls and parsed.error is None:
        return reply
    notes = list(reply.notes)
    if unescape(reply.content) != reply.content:
        notes.append(ESCAPED_NOTE)
    if parsed.calls:
        names = ", ".join(c.name for c in parsed.calls)
        notes.append(f"tool calls read from the reply's text (not parsed by the server): {names}")
    return reply.model_copy(
        update={
            "content": parsed.prose or None,
            "tool_calls": parsed.calls,
            "format_error": parsed.error,
            "notes": notes,
        }
    )


class _Reader:
    def __init__(self, text: str, tools: dict[str, ToolSpec], step_id: str) -> None:
        self.text = text
        self.tools = tools
        self.step_id = step_id
        self.spans: list[tuple[int, int]] = []  # what is taken out of the prose
        self.calls: list[ToolCall] = []
        self.errors: list[str] = []

    def read(self) -> None:
        for match in _BLOCK.finditer(self.text):
            span, body = match.span(), _unfenced(match.group(1))
            closed = match.group(0).rstrip().endswith("</tool_call>")
            if not closed and body == match.group(1):
                # Unclosed: the call is the JSON at its start; words after it stay words.
                with contextlib.suppress(json.JSONDecodeError):
                    _, end = json.JSONDecoder().raw_decode(body)
                    if body[end:].strip():
                        span = (span[0], match.start(1) + end)
                        body = body[:end]
            self._take(span, body, "a <tool_call> block", True)
        for match in _FENCE.finditer(self.text):
            if self._taken(match.start()):
                continue
            body, lang = match.group(2).strip(), match.group(1).lower()
            meant = lang in ("tool_call", "tool_calls", "tool", "function_call")
            if meant or (body.startswith(("{", "[")) and _NAME_KEY.search(body)):
                self._take(match.span(), body, "a code block", meant)
        self._scan_objects()
        self._scan_named()

    def _scan_objects(self) -> None:
        """JSON objects with a name key anywhere in the text (a bare reply, inline)."""
        decoder = json.JSONDecoder()
        for match in _NAME_KEY.finditer(self.text):
            start = match.start()
            if self._taken(start):
                continue
            try:
                data, end = decoder.raw_decode(self.text, start)
            except json.JSONDecodeError as exc:
                if self._looks_like_call(self.text[start : start + 200]):
                    self.spans.append((start, len(self.text)))
                    self.errors.append(f"a tool call's JSON is invalid ({exc.msg})")
                continue
            self._take_data((start, end), data, "a JSON object", False)

    def _scan_named(self) -> None:
        """`NAME({…})`, `functions.NAME: {…}` and a bare `functions.NAME:`."""
        decoder = json.JSONDecoder()
        names = "|".join(re.escape(n) for n in sorted(self.tools, key=len, reverse=True))
        if not names:
            return
        for match in re.finditer(rf"\b({names})\s*\(\s*(?=\{{)", self.text):
            if self._taken(match.start()):
                continue
            try:
                data, end = decoder.raw_decode(self.text, match.end())
            except json.JSONDecodeError:
                continue
            close = re.match(r"\s*\)", self.text[end:])
            if close is None:
                continue
            span = (match.start(), end + close.end())
            self._take_data(span, {"name": match.group(1), "arguments": data}, "a call", True)
        for match in _FUNCTIONS.finditer(self.text):
            if self._taken(match.start()) or match.group(1) not in self.tools:
                continue
            rest = self.text[match.end() :]
            lead = len(rest) - len(rest.lstrip())
            data: object = {}
            end = match.end()
            if rest.lstrip().startswith("{"):
                try:
                    data, stop = decoder.raw_decode(self.text, match.end() + lead)
                    end = stop
                except json.JSONDecodeError as exc:
                    self.spans.append((match.start(), len(self.text)))
                    self.errors.append(
                        f"the arguments of {match.group(1)} are invalid JSON ({exc.msg})"
                    )
                    continue
            call = {"name": match.group(1), "arguments": data}
            self._take_data((match.start(), end), call, "a call", True)

    def _take(self, span: tuple[int, int], body: str, where: str, meant: bool) -> None:
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            if meant or self._looks_like_call(body):
                self.spans.append(span)
                self.errors.append(f"{where} holds invalid JSON ({exc.msg})")
            return
        self._take_data(span, data, where, meant)

    def _take_data(self, span: tuple[int, int], data: object, where: str, meant: bool) -> None:
        items = cast("list[object]", data) if isinstance(data, list) else [data]
        found: list[ToolCall] = []
        errors: list[str] = []
        for item in items:
            outcome = self._call(item)
            if isinstance(outcome, ToolCall):
                found.append(outcome)
            elif outcome is not None:
                errors.append(outcome)
        if not found and not errors:
            if meant:
                self.spans.append(span)
                self.errors.append(f'{where} holds no tool call (no "name" and "arguments")')
            return
        self.spans.append(span)
        self.calls.extend(found)
        self.errors.extend(errors)

    def _call(self, item: object) -> ToolCall | str | None:
        """A call, an error (it is a call that cannot run), or None (not a call at all)."""
        if not isinstance(item, dict):
            return None
        data = cast("dict[str, Any]", item)
        function = data.get("function")
        if isinstance(function, dict):  # the OpenAI shape, written out
            data = cast("dict[str, Any]", function)
        name = data.get("name")
        keys = [k for k in _ARG_KEYS if k in data]
        if not isinstance(name, str) or (not keys and name not in self.tools):
            return None
        if name not in self.tools:
            return f"there is no tool {name!r} (the tools: {', '.join(self.tools)})"
        raw = data[keys[0]] if keys else {}
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                return f"the arguments of {name} are a string that is not JSON ({exc.msg})"
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            return f"the arguments of {name} must be a JSON object"
        args = cast("dict[str, Any]", raw)
        required = self.tools[name].parameters.get("required", [])
        missing = [str(r) for r in cast("list[object]", required) if r not in args]
        if missing:
            return f"{name} needs the argument(s) {', '.join(missing)}"
        number = len(self.calls) + 1
        return ToolCall(id=f"text_{self.step_id}_{number}", name=name, arguments=json.dumps(args))

    def _looks_like_call(self, text: str) -> bool:
        return any(f'"{n}"' in text for n in self.tools) and any(
            f'"{k}"' in text for k in ("name", *_ARG_KEYS)
        )

    def _taken(self, at: int) -> bool:
        return any(start <= at < end for start, end in self.spans)

    def result(self) -> ParsedText:
        prose = self.text
        for start, end in sorted(self.spans, reverse=True):
            prose = prose[:start] + prose[end:]
        prose = re.sub(r"\n{3,}", "\n\n", prose).strip()
        calls = [
            c.model_copy(update={"id": f"text_{self.step_id}_{n}"})
            for n, c in enumerate(self.calls)
        ]
        error = None
        if self.errors:
            error = (
                "; ".join(dict.fromkeys(self.errors))
                + f". Write each tool call as {SYNTAX}, with the tool's required arguments."
            )
        return ParsedText(prose=prose, calls=calls, error=error)


def _unfenced(body: str) -> str:
    """A block's body without a code fence around it."""
    match = re.fullmatch(r"```[A-Za-z_]*\s*(.*?)\s*```", body.strip(), re.S)
    return match.group(1) if match else body
