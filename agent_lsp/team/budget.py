"""One token and time budget per task, split across the roles by their `share`.

Each run of a role reserves a part of what its role has left (parallel workers split it), is
given that part as its `Limits.max_tokens`, and gives back what it did not use. The loop checks
its limit before every model call, so a role is stopped at the first call past its part.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from agent_lsp.messages import Usage
from agent_lsp.team.roles import ROLES, Role
from agent_lsp.team.state import RoleUsage


@dataclass
class Budget:
    tokens: int
    seconds: float
    started: float = field(default_factory=time.monotonic)
    left: dict[str, int] = field(default_factory=dict[str, int])
    shares: Mapping[str, int] | None = None  # percent by role name (`team.shares`)

    def __post_init__(self) -> None:
        if not self.left:
            self.left = {role.name: int(self.tokens * self.share(role)) for role in ROLES}

    def share(self, role: Role) -> float:
        """The role's part of the budget: its setting's percent, else its default."""
        if self.shares is not None and role.name in self.shares:
            return self.shares[role.name] / 100
        return role.share

    @classmethod
    def resumed(
        cls,
        tokens: int,
        seconds: float,
        used: dict[str, RoleUsage],
        spent: float,
        shares: Mapping[str, int] | None = None,
    ) -> Budget:
        """A resumed task's budget: what its roles used before the crash is gone."""
        budget = cls(tokens, max(0.0, seconds - spent), shares=shares)
        for name, usage in used.items():
            if name in budget.left:
                budget.left[name] = max(0, budget.left[name] - usage.total)
        return budget

    def reserve(self, role: str, parts: int = 1) -> int:
        """A part of the role's remaining tokens for one run (`parts` runs share it)."""
        amount = self.left.get(role, 0) // max(1, parts)
        self.left[role] = self.left.get(role, 0) - amount
        return amount

    def give_back(self, role: str, reserved: int, usage: Usage) -> None:
        used = usage.prompt_tokens + usage.completion_tokens
        self.left[role] = self.left.get(role, 0) + max(0, reserved - used)

    def seconds_left(self) -> float:
        return max(0.0, self.seconds - (time.monotonic() - self.started))


def add_usage(totals: dict[str, RoleUsage], role: str, usage: Usage) -> None:
    """The loop's usage of one run, summed into the role's totals."""
    mine = totals.setdefault(role, RoleUsage())
    mine.prompt_tokens += usage.prompt_tokens
    mine.completion_tokens += usage.completion_tokens
    mine.calls += usage.calls


def per_role(totals: dict[str, RoleUsage]) -> str:
    """e.g. `planner 1200, worker 5400, reviewer 800 tokens`."""
    parts = [f"{role.name} {totals[role.name].total}" for role in ROLES if role.name in totals]
    return (", ".join(parts) + " tokens") if parts else "no tokens"
