"""The user in a running team task, through `Session.steer` and the roles' controls.

Steer notes (`agentLsp.steer`, `AGENT:` lines): each note goes to every role running when it
comes (taken into its conversation at its next step, as the single agent's) and is kept in the
team's checkpoint (`TeamState.notes`) for the planner, which is given every note so far at each
later call. A note may come from any thread (the language server's loop): the team's own loop
moves the kept notes into its state.

`ask_user` (the planner's and the editor's tool): a role's question goes to the user through
the role's own channel, named by its role and step ("[editor s1] …"), answered through the
editor's prompt as the single agent's."""

from __future__ import annotations

from collections import deque

from agent_lsp.loop.control import TaskControl
from agent_lsp.seams import EditorChannel


class TeamControl(TaskControl):
    """The team task's control: the session's `control` while the team runs."""

    def __init__(self, channel: EditorChannel, timeout: float, title: str) -> None:
        super().__init__(channel, timeout, title=title)
        self.running: list[TaskControl] = []  # the controls of the roles running now
        self._kept: deque[str] = deque()  # for the planner, until the team's loop takes them

    def role(self, label: str, channel: EditorChannel | None = None) -> TaskControl:
        """A control for one role run (put in `running` while it runs); `channel`: the role's
        own (its `ask_user` questions go to the user through it, named by role and step)."""
        where = channel if channel is not None else self.channel
        return TaskControl(where, self.timeout, title=f"{self.title} ({label})")

    def steer(self, note: str) -> bool:
        note = " ".join(note.split())
        if not note:
            return False
        for control in list(self.running):
            control.steer(note)
        self._kept.append(note)
        return True

    def kept(self) -> list[str]:
        """The notes sent since the last call (on the team's loop: into its checkpoint)."""
        taken: list[str] = []
        while self._kept:
            taken.append(self._kept.popleft())
        return taken
