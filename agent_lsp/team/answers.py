"""A role's JSON answer: the last fenced ```json block of its text (or the bare text), parsed,
else a clear error naming what was expected."""

from __future__ import annotations

import json
import re
from typing import Any

from agent_lsp.errors import AgentLspError

FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def json_answer(text: str, what: str) -> Any:
    found = FENCE.findall(text)
    body = found[-1] if found else text.strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise AgentLspError(f"the {what} is not JSON ({exc.msg}): {text[:200]}") from None
