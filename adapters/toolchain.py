"""Pick the test runner(s) for a project and describe what was found."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from adapters.base import ToolchainAdapter
from adapters.command_runner import command_adapter
from adapters.detect import detect_toolchains
from adapters.extra import set_extra_args
from adapters.multi import CompositeAdapter
from adapters.probe import describe_project

__all__ = ["ToolchainAdapter", "describe_project", "detect_toolchain", "detect_toolchains"]


def detect_toolchain(
    root: Path, extra_args: Sequence[str] = (), command: str = ""
) -> ToolchainAdapter | None:
    """The adapter able to test ``root``, or None; its runs pass ``extra_args`` (the
    ``tests.args`` setting, :func:`adapters.extra.set_extra_args`). A ``command`` (the
    ``tests.command`` setting) replaces detection (:func:`adapters.command_runner.command_adapter`).

    With several toolchains (say pytest in the root and vitest in ``web/``) this is a
    :class:`CompositeAdapter` that runs them all and merges their reports, so that "the full
    suite passed" covers every part of the project."""
    if command.strip():
        chosen = command_adapter(command.strip())
        set_extra_args(chosen, extra_args)
        return chosen
    adapters = detect_toolchains(root)
    if not adapters:
        return None
    adapter = adapters[0] if len(adapters) == 1 else CompositeAdapter(adapters)
    set_extra_args(adapter, extra_args)
    return adapter
