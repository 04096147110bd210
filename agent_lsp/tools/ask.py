"""`ask_user`: the agent asks the user a question (in the editor, a prompt with the options or a
diagnostic with answer code actions, a question in words answered with `agentLsp.answer`; in the
terminal, a prompt). Only the question's own prompt answers it, never a steer note. It grants
nothing: commands and file changes are still decided by the safety policy, whatever the answer."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.loop.control import TaskControl
from agent_lsp.messages import ToolResult

MAX_OPTIONS = 6
# A question that reads like a permission request: the answer is told to grant nothing.
PERMISSION = re.compile(
    r"\b(?:may|can|could|shall)\s+i\b|\bpermi(?:t|ssion)|\ballow|\bapprov|\bok(?:ay)?\s+to\b",
    re.I,
)


class AskUserArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(
        min_length=1, max_length=2_000, description="The question, short and self-contained."
    )
    options: list[str] | None = Field(
        None,
        max_length=MAX_OPTIONS,
        description="A few short answers to choose from; none: the user answers in words.",
    )


class AskUserTool:
    name = "ask_user"
    description = (
        "Ask the user a question when the task is ambiguous or you are stuck and a guess "
        "would be costly. Not for permission: it grants nothing; run the command and the "
        "safety policy asks the user itself. No answer in time is no answer: then decide."
    )
    args_model = AskUserArgs
    read_only = True

    def __init__(self, control: TaskControl) -> None:
        self.control = control

    async def run(self, args: AskUserArgs) -> ToolResult:
        options = [o.strip() for o in args.options or [] if o.strip()]
        answer = await self.control.ask(" ".join(args.question.split()), options)
        grants = ""
        if PERMISSION.search(args.question):
            grants = (
                " (this answer grants no permission: commands and file changes are still "
                "decided by the safety policy, which asks the user itself)"
            )
        if answer.text is None:
            return ToolResult.ok(
                f"no answer: {answer.why}. Decide yourself, or stop and say why.{grants}",
                answered=False,
            )
        return ToolResult.ok(f"the user answered: {answer.text}{grants}", answered=True)
