"""Loop discipline: refuse a call that already failed twice; notice an agent going in circles."""

from __future__ import annotations

import json
from collections import Counter, deque

from agent_lsp.messages import ToolCall, ToolResult, ToolStatus

TARGET_KEYS = ("path", "pattern", "command", "name", "targets", "section")


def _normalized(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except json.JSONDecodeError:
        return arguments.strip()


def action_key(call: ToolCall) -> str:
    """The tool and what it acts on: reading five different files is not a loop."""
    try:
        args = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return f"{call.name}:?"
    target = next((args[k] for k in TARGET_KEYS if isinstance(args, dict) and k in args), "")
    return f"{call.name}:{json.dumps(target, sort_keys=True)}"


class LoopGuard:
    def __init__(self, repeat_limit: int = 2, window: int = 5, ratio: float = 0.8) -> None:
        self.repeat_limit = repeat_limit
        self.window = window
        self.ratio = ratio
        self._failures: Counter[tuple[str, str]] = Counter()
        self._recent: deque[tuple[str, int]] = deque(maxlen=window)

    def refusal(self, call: ToolCall) -> ToolResult | None:
        """An error result instead of running a call that already failed `repeat_limit` times."""
        if self._failures[(call.name, _normalized(call.arguments))] < self.repeat_limit:
            return None
        return ToolResult.fail(
            f"refused: this exact {call.name} call already failed {self.repeat_limit} times. "
            "Diagnose first (read the file again, list files, check the configuration) or "
            "change approach.",
            refused=True,
        )

    def record(self, call: ToolCall, result: ToolResult, edit_count: int) -> None:
        key = (call.name, _normalized(call.arguments))
        if result.status is ToolStatus.ERROR:
            self._failures[key] += 1
        else:
            self._failures.pop(key, None)
        self._recent.append((action_key(call), edit_count))

    def looping(self) -> str | None:
        """A description of the loop if the last steps repeat one action with no file change."""
        if len(self._recent) < self.window:
            return None
        actions = Counter(action for action, _ in self._recent)
        action, count = actions.most_common(1)[0]
        edits = {edit_count for _, edit_count in self._recent}
        if count / self.window >= self.ratio and len(edits) == 1:
            return f"the last {self.window} steps repeated {action} {count} times with no change"
        return None
