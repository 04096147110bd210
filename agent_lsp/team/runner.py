"""Runs one role: the session's `Agent` with the role's tools (the only schemas its requests
carry), the role's own short system prompt, its routed first message, its part of the project's
memory (its starting context), its part of the budget, and a `RoleChannel`; the usage is summed
into the task's totals."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from agent_lsp.loop.toolbox import ToolBox
from agent_lsp.messages import ChatMessage, TaskOutcome, TaskStatus
from agent_lsp.seams import EditorChannel
from agent_lsp.task import Task, TaskKind
from agent_lsp.team.budget import Budget, add_usage, per_role
from agent_lsp.team.channel import RoleChannel, WriteLocks
from agent_lsp.team.host import TeamHost
from agent_lsp.team.memory import ProjectContext
from agent_lsp.team.preload import step_texts
from agent_lsp.team.presenter import PLAN, milestone, plan_entries
from agent_lsp.team.roles import Role
from agent_lsp.team.routing import first_message
from agent_lsp.team.state import TeamState, TeamStore
from agent_lsp.team.steer import TeamControl
from agent_lsp.team.taskfile import role_transcript
from agent_lsp.team.teamlog import RoleLog
from agent_lsp.team.verdict import final_words, may_test_write, tool_results


class RoleRunner:
    def __init__(
        self,
        host: TeamHost,
        channel: EditorChannel,
        store: TeamStore,
        state: TeamState,
        budget: Budget,
        profile: str,
    ) -> None:
        self.host = host
        self.channel = channel
        self.store = store
        self.state = state
        self.budget = budget
        self.profile = profile
        self.memory = ProjectContext()  # the project's memory, built once for the task
        self.transcript: list[ChatMessage] = []  # every role's calls, for the experience
        self.control: TeamControl | None = None  # the user's steer notes reach running roles

    def take_notes(self) -> None:
        """The user's steer notes sent meanwhile, into the checkpoint (for the planner)."""
        if self.control is not None and (notes := self.control.kept()):
            self.state.notes += notes
            self.store.save(self.state)

    async def run(
        self,
        role: Role,
        offered: Mapping[str, str],
        label: str,
        parts: int = 1,
        locks: WriteLocks | None = None,
        start_hashes: Mapping[Path, str | None] | None = None,
    ) -> tuple[TaskOutcome, RoleChannel]:
        """One run of `role`; a role past its budget (tokens or the task's time) is stopped
        and its outcome says so."""
        only = may_test_write if role.test_files_only else None
        mine = locks if role.writes else None
        channel = RoleChannel(self.channel, label, mine, start_hashes, only)
        acts = role.writes or role.runs
        control = self.control.role(label, channel) if self.control is not None else None
        agent = self.host.make_agent(channel, self.profile, "", read_only=not acts, control=control)
        channel.workspace = agent.workspace
        if "step_text" in role.keys and offered.get("step_files"):  # saves a read_file call
            text = step_texts(agent.workspace, offered["step_files"].splitlines())
            offered = {**offered, "step_text": text}
        box = agent.toolbox  # the role's tools only: the schemas of no other reach the model
        agent.toolbox = ToolBox(
            [tool for name, tool in box.tools.items() if name in role.tools],
            timeout=box.timeout,
            slow_timeout=box.slow_timeout,
            keeper=box.keeper,
            notes=box.notes,
        )
        agent.system_template = role.system  # not the single agent's system prompt
        memory = self.memory.for_role(role.keys)  # the parts its keys name
        agent.hooks = RoleLog(self.host.record, self.state.task_id, role.name, label, memory)
        agent.verifier = None  # the team verifies the merged result, in VERIFYING
        agent.review_check = None  # and reviews it, in REVIEWING (its reviewer role)
        reserved = self.budget.reserve(role.name, parts)
        agent.limits = replace(agent.limits, max_tokens=reserved)
        kind = TaskKind.TASK if acts else TaskKind.EXPLAIN
        task = Task(kind=kind, instruction=first_message(role, offered))
        if self.control is not None and control is not None:
            self.control.running.append(control)
        try:
            outcome = await asyncio.wait_for(agent.run(task), self.budget.seconds_left())
        except TimeoutError:
            outcome = TaskOutcome(
                status=TaskStatus.FAILED,
                summary="the task's time budget is used up",
                stop_reason="time budget",
                usage=agent.usage,
                changed_files=list(agent.workspace.changed_files),
            )
        finally:
            if self.control is not None and control is not None:
                self.control.running.remove(control)
        self.transcript += role_transcript(label, agent.messages, outcome)
        channel.results = tool_results(agent.messages)
        channel.words = final_words(agent.messages)
        self.budget.give_back(role.name, reserved, outcome.usage)
        add_usage(self.state.usage, role.name, outcome.usage)
        self.state.tool_runs += sum(m.role == "tool" for m in agent.messages)
        for rel in outcome.changed_files:
            if rel not in self.state.changed:
                self.state.changed.append(rel)
        if self.control is not None:
            self.state.notes += self.control.kept()
        self.store.save(self.state)
        used = outcome.usage.prompt_tokens + outcome.usage.completion_tokens
        message = (
            f"team: {label} {outcome.status.value} ({used} tokens); "
            f"so far {per_role(self.state.usage)}"
        )
        plan = {PLAN: plan_entries(self.state.steps)} if self.state.steps else {}
        await self.channel.report(milestone(message, role=role.name, team_step=label, **plan))
        return outcome, channel
