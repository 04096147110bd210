"""What the core says, as ACP says it: tool kinds, permission option kinds, stop reasons and the
text blocks of a prompt (pure functions, no I/O)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp.helpers import plan_entry, update_plan
from acp.schema import (
    AgentPlanUpdate,
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PermissionOptionKind,
    PlanEntryStatus,
    ResourceContentBlock,
    StopReason,
    TextContentBlock,
    TextResourceContents,
    ToolCallLocation,
    ToolKind,
)

from agent_lsp.messages import TaskOutcome, TaskStatus
from agent_lsp.safety.policy import ALLOW_ONCE, ALWAYS_ALLOW, DENY

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)

_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_files": "read",
    "git_status": "read",
    "git_diff": "read",
    "get_diagnostics": "read",
    "search_text": "search",
    "find_symbol": "search",
    "edit_file": "edit",
    "write_file": "edit",
    "run_tests": "execute",
    "run_command": "execute",
    "ask_user": "think",
}
# answers that refuse (the policy's Deny, the conflict question's Stop, ask_user's Skip …)
_REFUSALS = frozenset({DENY.casefold(), "stop", "skip", "reject", "no", "keep and stop"})
_PATH = re.compile(r'^\{"path":\s*"((?:[^"\\]|\\.)*)"')
_OPTION_IDS = {ALLOW_ONCE: "allow-once", ALWAYS_ALLOW: "allow-always", DENY: "deny"}


def tool_kind(tool: str | None) -> ToolKind:
    """The ACP kind of one of our tools; a check the loop runs itself (tests) is `execute`."""
    if tool is None:
        return "execute"
    return _KINDS.get(tool, "other")


def option_kind(option: str) -> PermissionOptionKind:
    if option == ALWAYS_ALLOW:
        return "allow_always"
    return "reject_once" if option.casefold() in _REFUSALS else "allow_once"


def option_ids(options: Sequence[str]) -> list[str]:
    """A stable id per option: the policy's by name, any other by its place."""
    return [_OPTION_IDS.get(o, f"option-{n}") for n, o in enumerate(options)]


_PLAN_STATUS: dict[str, PlanEntryStatus] = {"running": "in_progress", "done": "completed"}


def plan_update(steps: Sequence[Mapping[str, str]]) -> AgentPlanUpdate:
    """A team task's plan (`team.presenter.plan_entries`) as ACP's: each step `id: goal`, its
    status pending, in progress or completed (a failed step is completed, and says so)."""
    entries = []
    for step in steps:
        status = step.get("status", "pending")
        content = f"{step.get('id', '?')}: {step.get('goal', '')}"
        entries.append(
            plan_entry(
                content + (" (failed)" if status == "failed" else ""),
                priority="medium",
                status="completed" if status == "failed" else _PLAN_STATUS.get(status, "pending"),
            )
        )
    return update_plan(entries)


def stop_reason(outcome: TaskOutcome) -> StopReason:
    if outcome.status is TaskStatus.CANCELLED:
        return "cancelled"
    if outcome.stop_reason == "max steps":
        return "max_turn_requests"
    if outcome.stop_reason == "token budget":
        return "max_tokens"
    return "end_turn"


def call_title(
    message: str, tool: str | None, root: Path
) -> tuple[str, list[ToolCallLocation], Any]:
    """A tool call's title, the files it names and its arguments, from the loop's event text
    (`name {json arguments, cut at 120 characters}`): the arguments only when they are whole."""
    if tool is None or not message.startswith(f"{tool} "):
        return message, [], None
    text = message[len(tool) + 1 :]
    try:
        args: object = json.loads(text)
    except ValueError:  # cut: the path, when it came whole before the cut
        found = _PATH.search(text)
        args, path = None, (json.loads(f'"{found[1]}"') if found else None)
    else:
        path = args.get("path") if isinstance(args, dict) else None
    if isinstance(path, str) and path:
        return f"{tool} {path}", [ToolCallLocation(path=absolute(root, path))], args
    return message, [], args


def instruction(blocks: Sequence[PromptBlock], root: Path) -> tuple[str, list[str]]:
    """The task's words from a prompt: its text blocks joined, embedded text resources and
    links named with their text or address — a file of the project by its path from `root`,
    as the agent's tools name it; (text, the kinds of block not supported)."""
    parts: list[str] = []
    unsupported: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[{block.name}]({_named(root, block.uri)})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f"{_named(root, resource.uri)}:\n{resource.text}")
            else:
                unsupported.append("binary resource")
        else:
            unsupported.append(block.type)
    return "\n\n".join(p for p in parts if p.strip()), unsupported


def _named(root: Path, uri: str) -> str:
    """A `file:` URI of a file in the project as its path from the root (an address
    elsewhere as it is)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    try:
        return Path(unquote(parsed.path)).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return uri


def absolute(root: Path, rel: str) -> str:
    path = Path(rel)
    return str(path if path.is_absolute() else (root / path))
