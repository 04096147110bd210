"""What changed under a task since it began, found when its context is rebuilt (a resumed or
continued task, after a compaction): a file its task state names is gone (a path it named
while it was a file: `state.record_files`; a name in the task's words is none), the git branch
changed, or the project's conventions (`state/project/*.md`, the rules files) changed. The task
asks the user before acting on such a conflict; what the user let pass is not asked again."""

from __future__ import annotations

import hashlib

from agent_lsp.memory.checkpoints import Checkpoint
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.state import current_branch, gone_files, load_task
from agent_lsp.safety.reads import CONTEXT_TOOL

RULES_FILES = ("AGENTS.md", "CLAUDE.md", ".cursorrules")


class ConflictCheck:
    """The conflicts of one task, measured against what its checkpoint recorded."""

    def __init__(self, layout: Layout, checkpoint: Checkpoint) -> None:
        self.layout = layout
        self.checkpoint = checkpoint

    def baseline(self) -> None:
        """At task start: the conventions as they are now are the task's."""
        self.checkpoint.conventions = self._conventions()

    def find(self) -> list[str]:
        """Every conflict not let pass before, in words for the user and the model."""
        cp, root = self.checkpoint, self.layout.root
        found: list[str] = []
        ignored: list[str] = []
        state = load_task(self.layout, ignored)
        if state is not None:
            found.extend(
                f"the task state names {rel}, which no longer exists (renamed or deleted?)"
                for rel in gone_files(self.layout, state)
            )
        branch = current_branch(root)
        if cp.branch and branch and branch != cp.branch:
            found.append(f"the git branch changed from {cp.branch} to {branch}")
        conventions = self._conventions()
        if cp.conventions and conventions != cp.conventions:
            # no file named: this text lands in the task state, whose paths are checked
            found.append("the project's conventions changed (the project state or rules files)")
        return [c for c in found if c not in cp.acknowledged]

    def accept(self, conflicts: list[str]) -> None:
        """The user said go on: the state as it is now is the task's."""
        cp = self.checkpoint
        cp.acknowledged = [*cp.acknowledged, *conflicts]
        cp.branch = current_branch(self.layout.root) or cp.branch
        cp.conventions = self._conventions()

    def _conventions(self) -> str:
        digest = hashlib.sha256()
        reads = self.layout.reads
        folder = self.layout.state_project
        files = reads.folder(folder, warnings=[], label="", keep=lambda p: p.suffix == ".md")
        paths = [*sorted(files), *(self.layout.root / name for name in RULES_FILES)]
        for path in paths:
            try:
                data = reads.read_bytes(path, CONTEXT_TOOL)
            except OSError:
                continue
            digest.update(self.layout.rel(path).encode() + b"\0" + data + b"\0")
        return digest.hexdigest()
