"""Team mode: one task split over roles (planner, workers, reviewer), each the same `Agent`
underneath, driven by a checkpointed state machine.

Sits above `agent_lsp.tools` and `agent_lsp.loop` and below the front ends: it is given the
session (`host.TeamHost`, a protocol) and never imports it.
"""

from agent_lsp.team.orchestrator import Orchestrator, TeamOutcome
from agent_lsp.team.state import Phase, TeamStore

__all__ = ["Orchestrator", "Phase", "TeamOutcome", "TeamStore"]
