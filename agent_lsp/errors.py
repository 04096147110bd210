"""Errors the core raises; each one carries a message fit to show the user."""


class AgentLspError(Exception):
    """Base class: `str(error)` is a user-facing message."""


class ModelError(AgentLspError):
    """The model endpoint failed (unreachable, HTTP error, bad response) after retries."""


class EditRejectedError(AgentLspError):
    """The editor refused an edit, or it could not be applied."""


class WorkspaceError(AgentLspError):
    """A path outside the workspace, a missing file, or another file-system problem."""


class SettingsError(AgentLspError):
    """Invalid settings; defaults are used instead where possible."""


class TaskBusyError(AgentLspError):
    """A task is already running."""


class ContextWindowError(ModelError):
    """The request was longer than the model server's context window; `window` is the
    window in tokens when the server said it (it is then remembered for the endpoint)."""

    window: int | None = None
