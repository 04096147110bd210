"""The rebuild of the agent's starting context, in the numbered, idempotent style of init.d.

Built-in steps: S00 mount the state folders, S10 load the project rules and state, S20 load the
task, S25 recall experience, S30 validate (files the task names that are gone, a changed
branch). A project's own executables in `.agent-lsp/init.d/` run in name order among them, under
the command policy, and their output is included; a failing step is a WARN line, never fatal.
S90 emits the context. It runs at every task start, after every compaction and on resume.

Project steps run only in a trusted workspace (`agent-lsp trust`), confined like every command
(`agent_lsp.safety.confined`): the workspace read-only, no network, no API keys."""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from adapters import default_shell
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.logs import SessionLog
from agent_lsp.memory.rules import load_rules
from agent_lsp.memory.state import (
    current_branch,
    gone_files,
    load_project_state,
    load_task,
)
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.sandbox import Confinement, Sandbox
from agent_lsp.seams import EditorChannel

STEP_OUTPUT_CHARS = 2_000
SKIP_SUFFIXES = ("~", ".bak", ".orig", ".sample", ".md", ".txt", ".disabled")
# The headings of the context's sections (team mode routes them by these)
RULES_HEADING = "Project rules: "  # + the rules file's path
STATE_HEADING = "Project state: "  # + the state file's name (conventions...)
EXPERIENCE_HEADING = "Experience from earlier tasks (details: read_file .agent-lsp/memory/<file>)"
INITD_HEADING = "init.d/"  # + the project step's name
REASONS = {
    "start": "at task start",
    "compaction": "after the conversation was compacted",
    "resume": "after a restart: the task resumes from its checkpoint",
    "continue": "when the user continued the stopped task with a hint",
}


@dataclass
class InitReport:
    context: str
    warnings: list[str] = field(default_factory=list[str])
    conflicts: list[str] = field(default_factory=list[str])
    # (heading, text) of each part of `context`: team mode gives each role some of them
    sections: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])


@dataclass
class _Run:
    reason: str
    warnings: list[str] = field(default_factory=list[str])
    conflicts: list[str] = field(default_factory=list[str])
    sections: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])


@dataclass
class TaskFacts:
    """What the init steps know of the task."""

    goal: str
    focus: str | None = None
    branch: str | None = None  # recorded when the task started
    recalled: str = ""


Step = Callable[[_Run], Awaitable[None]]


class InitRunner:
    def __init__(
        self,
        layout: Layout,
        facts: TaskFacts,
        channel: EditorChannel,
        timeout: float = 10.0,
        log: SessionLog | None = None,
        scratch: Path | None = None,
        policy: CommandPolicy | None = None,
        shell: ConfinedShell | None = None,
    ) -> None:
        """`policy` decides whether a project step may run: the task's own gate (its safety
        level, rules, trust, the user's "always allow"); without one, the default policy.
        `shell` runs the steps (default: confined to a read-only workspace)."""
        self.layout = layout
        self.facts = facts
        self.channel = channel
        self.timeout = timeout
        self.log = log
        self.scratch = scratch
        self.shell = shell or ConfinedShell(
            Sandbox(), Confinement(visible=(layout.root,)), default_shell(max_output_bytes=64_000)
        )
        self.policy = policy
        self._decisions: dict[tuple[str, int, int], tuple[bool, str]] = {}

    async def run(self, reason: str) -> InitReport:
        run = _Run(reason)
        for name, step in self._steps(run):
            try:
                await step(run)
            except Exception as exc:  # one broken step never stops the rebuild
                run.warnings.append(f"init {name}: failed ({exc!r})")
        context = self._emit(run)
        if self.scratch is not None and context:
            await asyncio.to_thread(self._write_scratch, self.scratch, context)
        return InitReport(context, run.warnings, run.conflicts, run.sections)

    def _steps(self, run: _Run) -> list[tuple[str, Step]]:
        steps: list[tuple[str, Step]] = [
            ("S00-mount", self._mount),
            ("S10-load-project", self._load_project),
            ("S20-load-task", self._load_task),
            ("S25-recall", self._recall),
            ("S30-validate", self._validate),
        ]
        for path in self._project_steps(run):
            steps.append((path.name, lambda r, p=path: self._project_step(r, p)))
        return sorted(steps, key=lambda s: s[0])

    async def _mount(self, run: _Run) -> None:
        await asyncio.to_thread(self.layout.mount)

    async def _load_project(self, run: _Run) -> None:
        root = self.layout.root
        rules = await asyncio.to_thread(  # through the guard, with the task's path rules
            load_rules, root, self.facts.focus, run.warnings, reads=self.layout.reads
        )
        run.sections.extend((f"{RULES_HEADING}{rel}", text) for rel, text in rules)
        state = await asyncio.to_thread(load_project_state, self.layout, run.warnings)
        run.sections.extend((f"{STATE_HEADING}{name}", text) for name, text in state)

    async def _load_task(self, run: _Run) -> None:
        state = await asyncio.to_thread(load_task, self.layout, run.warnings)
        if state is None:
            if run.reason != "start":
                run.warnings.append(f"{self.layout.rel(self.layout.task_file)}: missing")
            return
        text = state.summary()
        only_goal = set(state.sections) <= {"goal"} and not state.extra
        if run.reason == "start" and only_goal:
            return  # just the task as given: the user message already says it
        rel = self.layout.rel(self.layout.task_file)
        run.sections.append((f"Current task ({rel}; keep it current with update_task)", text))

    async def _recall(self, run: _Run) -> None:
        if self.facts.recalled:
            run.sections.append((EXPERIENCE_HEADING, self.facts.recalled))

    async def _validate(self, run: _Run) -> None:
        root = self.layout.root
        ignored: list[str] = []
        state = await asyncio.to_thread(load_task, self.layout, ignored)
        if state is not None:
            gone = await asyncio.to_thread(gone_files, self.layout, state)
            run.conflicts.extend(
                f"the task state refers to {rel}, which does not exist (renamed or deleted?)"
                for rel in gone
            )
        branch = await asyncio.to_thread(current_branch, root)
        if self.facts.branch and branch and branch != self.facts.branch:
            run.conflicts.append(
                f"the branch changed from {self.facts.branch} to {branch} since the task started"
            )

    def _write_scratch(self, folder: Path, context: str) -> None:
        """Through the read guard: never through a link out of the workspace."""
        self.layout.reads.mkdir(folder)
        self.layout.reads.write(folder / "context.md", context + "\n")

    def _project_steps(self, run: _Run) -> list[Path]:
        folder = self.layout.initd
        if not folder.is_dir():
            return []
        if refusal := self.layout.reads.refusal(folder):
            run.warnings.append(f"init.d: not run ({refusal})")
            return []
        steps: list[Path] = []
        policy = self.policy or CommandPolicy(self.channel, set())
        if not policy.engine_for(self.layout.root).trusted:
            run.warnings.append(
                "init.d: the project's steps run only in a trusted workspace (agent-lsp trust)"
            )
            return []
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") or path.name.endswith(SKIP_SUFFIXES) or path.is_dir():
                continue
            if not os.access(path, os.X_OK):
                run.warnings.append(f"init.d/{path.name}: not executable (chmod +x); skipped")
                continue
            steps.append(path)
        return steps

    async def _project_step(self, run: _Run, path: Path) -> None:
        rel = self.layout.rel(path)
        st = await asyncio.to_thread(path.stat)
        key = (path.name, st.st_mtime_ns, st.st_size)
        decision = self._decisions.get(key)
        if decision is None:
            policy = self.policy or CommandPolicy(self.channel, set())
            decision = await policy.allows(shlex.quote(rel))
            self._decisions[key] = decision
        allowed, decided_by = decision
        if not allowed:
            run.warnings.append(f"init.d/{path.name}: not run ({decided_by})")
            self._log_command(rel, decided_by, None)
            return
        env = {
            **self.shell.environment(),
            "AGENT_LSP_ROOT": str(self.layout.root),
            "AGENT_LSP_REASON": run.reason,
            "AGENT_LSP_TASK_FILE": str(self.layout.task_file),
        }
        result = await self.shell.run(
            [str(path)], cwd=self.layout.root, timeout=self.timeout, env=env
        )
        self._log_command(rel, decided_by, result.exit_code)
        output = result.output.strip()
        if len(output) > STEP_OUTPUT_CHARS:
            output = output[:STEP_OUTPUT_CHARS] + "\n[... output cut]"
        if result.timed_out:
            run.warnings.append(f"init.d/{path.name}: timed out after {self.timeout:.0f} s")
        elif result.exit_code != 0:
            last = output.splitlines()[-1] if output else ""
            run.warnings.append(f"init.d/{path.name}: exit code {result.exit_code}: {last}")
        elif output:
            run.sections.append((f"{INITD_HEADING}{path.name}", output))

    def _log_command(self, rel: str, decided_by: str, exit_code: int | None) -> None:
        if self.log is not None:
            self.log.record(
                "command",
                "init",
                command=rel,
                cwd=str(self.layout.root),
                decided_by=decided_by,
                exit_code=exit_code,
            )

    def _emit(self, run: _Run) -> str:
        """S90-emit-context: conflicts first, then the state, then the restate instruction."""
        if not (run.sections or run.conflicts or run.warnings) and run.reason == "start":
            return ""
        lines = [
            f"## Starting context, rebuilt {REASONS.get(run.reason, run.reason)}",
            "These files are the source of truth, over anything earlier in the conversation.",
        ]
        if run.conflicts:
            lines.append("CONFLICTS - resolve or confirm these before acting:")
            lines.extend(f"- {c}" for c in run.conflicts)
        lines.extend(f"WARN {w}" for w in run.warnings)
        for heading, body in run.sections:
            lines.append(f"### {heading}\n{body.strip()}")
        lines.append("Before your first action, restate the task in one line.")
        return "\n".join(lines)
