"""Which of the files a task changed it concerns: the review before done flags a file changed
that the task never named, the model never read or was shown, and no test it saw covers —
most often an edit made blind, or a change that strayed from the task (SPEC: review before
done). Created files are the task's own."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from adapters import tests_for_source
from agent_lsp.errors import AgentLspError
from agent_lsp.loop.compaction import SUMMARY_HEAD
from agent_lsp.messages import ChatMessage
from agent_lsp.project.workspace import Workspace
from agent_lsp.task import Task

# Tool results that show no file's text, only its name, or the agent's own change.
NOT_SHOWN = frozenset(
    {"edit_file", "write_file", "list_files", "git_status", "git_diff", "update_task", "remember"}
)
# The harness's own messages that name the agent's changes back to it (not the task's words).
OWN_ECHOES = ("Applied the edits written in your reply", SUMMARY_HEAD)
MAX_TESTS = 50  # test files of a changed file looked at (the nearest first)
MAX_TEXT = 1_000_000  # characters of a changed file searched for the task's names
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_PATHISH = re.compile(r"[\w.\-/\\]+")
# Words that look like a method in `name(…) {` and are none (`for (…) {`, `catch (e) {`).
_NOT_NAMES = frozenset(
    {"for", "while", "switch", "catch", "with", "function", "return", "else", "try", "new"}
)


def task_words(task: Task) -> str:
    """What the task says: the user's words, the file it started from, the diagnostic."""
    diagnostic = task.diagnostic.message if task.diagnostic is not None else ""
    return "\n".join((task.instruction, task.path or "", diagnostic))


def seen_in(messages: Sequence[ChatMessage]) -> tuple[str, set[str]]:
    """What the conversation showed the model after the task's own message (tool results
    other than `NOT_SHOWN` ones; the later user messages — test failures, notes — but not the
    harness's echoes of the agent's own edits), and the paths its read_file and write_file
    calls named (kept when compaction has dropped their results, and in a resumed
    conversation, whose workspace has not seen them)."""
    tools: dict[str, str] = {}
    read: set[str] = set()
    shown: list[str] = []
    users = 0
    for message in messages:
        for call in message.tool_calls:
            tools[call.id] = call.name
            if call.name in ("read_file", "write_file"):
                read.update(_paths(call.arguments))
        content = message.content or ""
        if message.role == "user":
            users += 1
            if users > 1 and content and not content.startswith(OWN_ECHOES):
                shown.append(content)
        elif (
            message.role == "tool"
            and content
            and tools.get(message.tool_call_id or "") not in NOT_SHOWN
        ):
            shown.append(content)
    return "\n".join(shown), read


def _paths(arguments: str) -> Iterable[str]:
    try:
        data = json.loads(arguments)
    except ValueError:
        return ()
    path = data.get("path") if isinstance(data, dict) else None
    if not isinstance(path, str) or not path.strip():
        return ()
    return (_normal(path),)


def _normal(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


class Named:
    """The files a text names, as its path-like words give them (each word, and each of its
    tails: `/tmp/x/src/calc.py` names `src/calc.py` and `calc.py`), found once."""

    def __init__(self, text: str) -> None:
        self.forms: set[str] = set()
        for word in _PATHISH.findall(text):
            parts = [p for p in _normal(word).rstrip(".-").split("/") if p]
            self.forms.update("/".join(parts[i:]) for i in range(len(parts)))

    def __contains__(self, rel: str) -> bool:
        return rel in self.forms or PurePosixPath(rel).name in self.forms


_DEFINITION = (
    r"^[ \t]*(?:export\s+)?(?:default\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|type|const|let|var|interface|struct)\s+"
    r"(?:\([^)\n]*\)\s*)?(?:{names})\b"
)
_METHOD = r"^[ \t]*(?:async\s+)?(?:static\s+)?(?:{names})\s*\([^)\n]*\)[^\n]*\{{[ \t]*$"


def defines(text: str, words: str) -> bool:
    """Whether the file's `text` defines a name the task's words use (`Stock.remove` → a
    `def remove`, `func (s *Stock) Remove(`, a method `remove(qty) {`); case aside."""
    names = sorted({m.group(0) for m in _IDENTIFIER.finditer(words)} - _NOT_NAMES)
    if not names:
        return False
    alternatives = "|".join(re.escape(n) for n in names)
    return any(
        re.search(form.format(names=alternatives), text, re.MULTILINE | re.IGNORECASE)
        for form in (_DEFINITION, _METHOD)
    )


def unseen_changes(task: Task, workspace: Workspace, messages: Sequence[ChatMessage]) -> list[str]:
    """The changed files the task concerns by no sign: not created by the agent, not the
    task's file, not named by its words or by anything the model was shown, not read, not
    defining a name the task uses, and tested by no test file the model saw or the task named.
    Files outside the project (an extra root) are not judged. Reads the files and the test
    layout: call it off the event loop."""
    candidates = [
        rel
        for rel in workspace.changed_files
        if rel not in workspace.created
        and rel not in workspace.looked_at
        and rel != task.path
        and not PurePosixPath(rel).is_absolute()
    ]
    if not candidates:
        return []
    words = task_words(task)
    shown, read = seen_in(messages)
    looked = workspace.looked_at | read | ({task.path} if task.path else set())
    named = Named(words + "\n" + shown)

    def seen(rel: str) -> bool:
        return rel in looked or rel in named

    unseen: list[str] = []
    for rel in candidates:
        if seen(rel):
            continue
        try:
            text = workspace.read_text(workspace.root / rel)[:MAX_TEXT]
        except (AgentLspError, OSError, ValueError):
            text = ""
        if text and defines(text, words):
            continue
        try:
            tests = tests_for_source(workspace.root, rel)[:MAX_TESTS]
        except (OSError, ValueError):
            tests = []
        if any(seen(test) for test in tests):
            continue
        unseen.append(rel)
    return unseen
