"""`Decision`: the record of one permission decision — what was asked for, at which level,
which rule decided, whether the user was asked and who answered. The session log stores it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_lsp.config.schema import PermissionLevel

__all__ = ["Decision"]


def _now() -> datetime:
    return datetime.now(UTC)


class Decision(BaseModel):
    """allowed / denied, by a rule or the level, or asked and answered (or not) by the user."""

    model_config = ConfigDict(frozen=True)

    decision: Literal["allowed", "denied"]
    level: PermissionLevel
    rule: str = Field(description="What decided: a policy rule, the level, or the built-in list.")
    answered_by: Literal["policy", "user", "no answer"] = "policy"
    answer: str | None = Field(default=None, description="The option the user chose, when asked.")
    asked: bool = False
    command: str = Field(description="The command line, or the tool and path of a file access.")
    cwd: str
    tool: str = "run_command"
    reasons: list[str] = Field(default_factory=list[str])
    sandbox: str | None = Field(
        default=None, description="How a command ran: bwrap, or policy only."
    )
    at: datetime = Field(default_factory=_now)

    @property
    def allowed(self) -> bool:
        return self.decision == "allowed"

    @property
    def decided_by(self) -> str:
        """One line for results and logs: "policy: read-only", "user: allow once" ..."""
        if self.answered_by == "no answer":
            return "no answer (denied)"
        if self.answered_by == "user":
            if not self.allowed:
                return "user: denied"
            return f"user: {(self.answer or 'allowed').lower()}"
        rule = self.rule.removeprefix("policy: ")
        return f"policy: {rule}" if self.allowed else f"policy: denied ({rule})"
